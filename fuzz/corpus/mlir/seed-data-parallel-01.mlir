func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}, %x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = loom.reduce_sum %0 [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  %2 = loom.sum_to %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1, %2 : tensor<f32>, tensor<3xf32>
}
