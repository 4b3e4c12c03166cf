func.func @masked(%w: tensor<2x3xf32> {loom.param = "w"},
                  %mask: tensor<2x3xf32> {loom.input = "mask"}) -> tensor<f32>
    attributes {loom.differentiable} {
  %y = loom.mul %w, %mask : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_sum %y [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
