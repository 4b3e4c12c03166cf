func.func @written_sum(%a: tensor<4x8xf64>, %c: tensor<4x8xf64>, %gamma: tensor<8xf64>, %beta: tensor<8xf64>) -> tensor<4x8xf64> {
  %x = loom.add %a, %c : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %mean = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d = loom.sub %x, %mean : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq = loom.mul %d, %d : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var = loom.reduce_mean %sq [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %eps = loom.constant dense<1.0e-3> : tensor<f64>
  %ve = loom.add %var, %eps : (tensor<4x1xf64>, tensor<f64>) -> tensor<4x1xf64>
  %r = loom.rsqrt %ve : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %n = loom.mul %d, %r : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %s = loom.mul %n, %gamma : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %y = loom.add %s, %beta : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}
