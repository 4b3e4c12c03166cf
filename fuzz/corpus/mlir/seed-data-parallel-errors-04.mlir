func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.reduce_sum %w [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  %1 = loom.reduce_sum %w [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  %2 = loom.add %0, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %2, %w : tensor<f32>, tensor<3xf32>
}
