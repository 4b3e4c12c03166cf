func.func @f(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  %0 = loom.sum_to %a, %b : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}
