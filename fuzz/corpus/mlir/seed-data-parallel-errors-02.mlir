func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> (tensor<f32> {loom.output = "loss"}) {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
