func.func @f(%ids: tensor<?x?xi32>) {
  %0 = loom.iota %ids {dim = 2 : i64} : tensor<?x?xi32> -> tensor<?xf32>
  return
}
