func.func @late_read(%w: tensor<4xf32> {loom.param = "w"}, %g: tensor<4xf32> {loom.input = "g"})
    -> (tensor<4xf32> {loom.output = "param.w"}, tensor<4xf32> {loom.output = "wg"}) {
  %0 = loom.sub %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = loom.mul %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
