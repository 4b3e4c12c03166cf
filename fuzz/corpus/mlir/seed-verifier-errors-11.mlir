func.func @f(%a: tensor<2x5x3xf32>, %b: tensor<4x3x6xf32>) {
  %0 = loom.matmul %a, %b : (tensor<2x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x5x6xf32>
  return
}
