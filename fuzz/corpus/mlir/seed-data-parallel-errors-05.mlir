func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  %1 = loom.all_reduce %w : tensor<3xf32>
  return %0, %1 : tensor<f32>, tensor<3xf32>
}
