func.func @declined(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>, %row: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %m0 = loom.reduce_mean %x [0] keep_dims : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %d0 = loom.sub %x, %m0 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>

  %eps = loom.constant dense<1.0e-5> : tensor<f32>
  %m1 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d1 = loom.sub %x, %m1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq1 = loom.mul %d1, %d1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq1b = loom.mul %sq1, %sq1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v1 = loom.reduce_mean %sq1b [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve1 = loom.add %v1, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r1 = loom.rsqrt %ve1 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n1 = loom.mul %d1, %r1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>

  %m2 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d2 = loom.sub %x, %m2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq2 = loom.mul %d2, %d2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2 = loom.reduce_mean %sq2 [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve2 = loom.add %v2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r2 = loom.rsqrt %ve2 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n2 = loom.mul %d2, %r2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %s2 = loom.mul %n2, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y2 = loom.add %s2, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>

  %m3 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d3 = loom.sub %x, %m3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq3 = loom.mul %d3, %d3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v3 = loom.reduce_mean %sq3 [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve3 = loom.add %v3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r3 = loom.rsqrt %ve3 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n3 = loom.mul %d3, %r3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>

  %b4 = loom.add %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y4 = loom.layer_norm %b4, %gamma, %beta {epsilon = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %d0, %n1, %v2, %n3, %y4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
