func.func @not_transposed(%x: tensor<3x4xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %p = loom.matmul %x, %w : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %k = loom.slice %p {dim = 1 : i64, start = 0 : i64, end = 4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k : tensor<3x4xf32>
}
