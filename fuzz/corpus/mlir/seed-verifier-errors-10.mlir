func.func @f(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  %0 = loom.matmul %a, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}
