func.func @update(%w: tensor<4xf32> {loom.param = "w"}, %g: tensor<4xf32> {loom.input = "g"})
    -> (tensor<4xf32> {loom.output = "param.w"}) {
  %0 = loom.sub %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
