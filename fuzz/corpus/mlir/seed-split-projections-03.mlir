func.func @rows(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x8xf32> {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %r = loom.slice %p {dim = 0 : i64, start = 0 : i64, end = 1 : i64} : (tensor<3x8xf32>) -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}
