func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  %0 = loom.concat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}
