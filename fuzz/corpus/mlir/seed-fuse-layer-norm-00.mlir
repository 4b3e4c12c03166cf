func.func @onnx_export(%x: tensor<?x?x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %mean = loom.reduce_mean %x [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %d = loom.sub %x, %mean : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %two = loom.constant dense<2.0> : tensor<f32>
  %sq = loom.pow %d, %two : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %var = loom.reduce_mean %sq [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %eps = loom.constant dense<1.0e-5> : tensor<f32>
  %ve = loom.add %var, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %std = loom.sqrt %ve : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = loom.div %d, %std : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %s = loom.mul %n, %gamma : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = loom.add %s, %beta : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
