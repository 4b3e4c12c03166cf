func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}
