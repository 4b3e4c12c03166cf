func.func @f(%a: tensor<3xf32>, %b: tensor<2x4xf32>) {
  %0 = loom.broadcast_as %a, %b : (tensor<3xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}
