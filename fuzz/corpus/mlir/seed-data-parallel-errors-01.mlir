func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> (tensor<3xf32> {loom.output = "grad.w"}) {
  return %w : tensor<3xf32>
}
