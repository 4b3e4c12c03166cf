func.func @variants(%x: tensor<4x8xf64>, %gamma: tensor<8xf64>, %beta: tensor<8xf64>) -> tensor<4x8xf64> {
  %eps = loom.constant dense<1.0e-3> : tensor<f64>
  %mean = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d = loom.sub %x, %mean : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq = loom.mul %d, %d : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var = loom.reduce_mean %sq [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %ve = loom.add %eps, %var : (tensor<f64>, tensor<4x1xf64>) -> tensor<4x1xf64>
  %r = loom.rsqrt %ve : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %n = loom.mul %r, %d : (tensor<4x1xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %s = loom.mul %gamma, %n : (tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %y = loom.add %beta, %s : (tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>

  %mean2 = loom.reduce_mean %y [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d2 = loom.sub %y, %mean2 : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq2 = loom.mul %d2, %d2 : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var2 = loom.reduce_mean %sq2 [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %ve2 = loom.add %var2, %eps : (tensor<4x1xf64>, tensor<f64>) -> tensor<4x1xf64>
  %std2 = loom.sqrt %ve2 : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %one = loom.constant dense<1.0> : tensor<f64>
  %r2 = loom.div %one, %std2 : (tensor<f64>, tensor<4x1xf64>) -> tensor<4x1xf64>
  %n2 = loom.mul %d2, %r2 : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %s2 = loom.mul %n2, %gamma : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %y2 = loom.add %s2, %beta : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  return %y2 : tensor<4x8xf64>
}
