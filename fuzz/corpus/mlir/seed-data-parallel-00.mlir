func.func @loss_grad(%w: tensor<4x8xf32> {loom.param = "w"}, %b: tensor<8xf32> {loom.param = "b"},
                     %u: tensor<16x16xf32> {loom.param = "u"}, %x: tensor<3x4xf32> {loom.input = "x"},
                     %m: tensor<3xf32> {loom.input = "mask"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<4x8xf32> {loom.output = "grad.w"},
        tensor<8xf32> {loom.output = "grad.b"}, tensor<16x16xf32> {loom.output = "grad.u"}) {
  %c = loom.reduce_sum %m [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  %one = loom.constant dense<1.0> : tensor<f32>
  %cmax = loom.maximum %c, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %s = loom.reduce_sum %x [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
  %loss = loom.div %s, %cmax : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %gb = loom.broadcast_as %loss, %b : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %gw = loom.broadcast_as %loss, %w : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %gu = loom.broadcast_as %loss, %u : (tensor<f32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %loss, %gw, %gb, %gu : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<16x16xf32>
}
