func.func @f(%ids: tensor<?x?xi32>) {
  %0 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  return
}
