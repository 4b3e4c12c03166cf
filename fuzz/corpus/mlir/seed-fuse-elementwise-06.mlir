func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}, %u: tensor<3xf32> {loom.param = "u"},
                     %x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"},
        tensor<3xf32> {loom.output = "grad.u"}) {
  %0 = loom.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = loom.add %0, %u : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %2 = loom.reduce_sum %1 [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  %3 = loom.sum_to %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = loom.sum_to %0, %u : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %2, %3, %4 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
