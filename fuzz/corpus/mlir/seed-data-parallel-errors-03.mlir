func.func @loss_grad(%x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<?x3xf32> {loom.output = "grad.x"}) {
  %0 = loom.reduce_sum %x [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  return %0, %x : tensor<f32>, tensor<?x3xf32>
}
