func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) {
  %0 = loom.concat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<2x6xf32>
  return
}
