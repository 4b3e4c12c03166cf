func.func @q_scaled(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %c = loom.constant dense<0.5> : tensor<f32>
  %qs = loom.mul %c, %q : (tensor<f32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %s = loom.matmul %qs, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %p = loom.softmax %s {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = loom.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}
