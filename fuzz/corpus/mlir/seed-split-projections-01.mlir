func.func @kv_no_bias(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %k = loom.slice %p {dim = 1 : i64, start = 0 : i64, end = -4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %v = loom.slice %p {dim = 1 : i64, start = -4 : i64, end = 0 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k, %v : tensor<3x4xf32>, tensor<3x4xf32>
}
