func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf64>) {
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf64>) -> tensor<2x4xf32>
  return
}
