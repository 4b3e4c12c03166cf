func.func @f(%ids: tensor<?xi32>) {
  %0 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?xi32> -> tensor<?x1x1x?xf32>
  return
}
