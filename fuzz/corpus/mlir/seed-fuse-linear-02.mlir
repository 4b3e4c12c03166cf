func.func @orders(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>,
                  %r: tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %1 = loom.add %b, %0 : (tensor<5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %2 = loom.gelu %1 : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %3 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %4 = loom.add %3, %r : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  return %2, %4 : tensor<8x5xf32>, tensor<8x5xf32>
}
