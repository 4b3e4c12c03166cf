func.func @read_whole(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>)
    -> (tensor<3x4xf32>, tensor<3x8xf32>) {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %s = loom.add %p, %b : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %k = loom.slice %s {dim = 1 : i64, start = 0 : i64, end = 4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k, %s : tensor<3x4xf32>, tensor<3x8xf32>
}
