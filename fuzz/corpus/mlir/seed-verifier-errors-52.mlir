func.func @f(%ids: tensor<?x?xi32>) {
  %0 = loom.causal_mask %ids {dim = 5 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  return
}
