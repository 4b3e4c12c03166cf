func.func @declined(%x: tensor<8x4xf32>, %wt: tensor<4x5xf32>, %xt: tensor<4x8xf32>,
                    %w: tensor<5x4xf32>, %q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>, tensor<2x3x8x8xf32>) {
  %0 = loom.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
  %1 = loom.matmul %xt, %w {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %2 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
  return %0, %1, %2 : tensor<8x5xf32>, tensor<8x5xf32>, tensor<2x3x8x8xf32>
}
