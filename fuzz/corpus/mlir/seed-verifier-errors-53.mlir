func.func @f(%ids: tensor<?x4xi32>) {
  %0 = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x4xi32> -> tensor<4x5xf32>
  return
}
