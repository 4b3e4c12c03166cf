func.func @f(%ids: tensor<?x7xi32>) {
  %0 = loom.iota %ids {dim = 1 : i64} : tensor<?x7xi32> -> tensor<7xi1>
  return
}
