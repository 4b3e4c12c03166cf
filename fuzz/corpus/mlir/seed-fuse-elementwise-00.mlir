func.func @producer_consumer(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %c = loom.constant dense<2.0> : tensor<f32>
  %bb = loom.broadcast_as %b, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = loom.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = loom.add %a, %bb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = loom.exp %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = loom.reduce_sum %e [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
