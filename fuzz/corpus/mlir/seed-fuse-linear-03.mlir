func.func @shared_product(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %1 = loom.add %0, %b : (tensor<8x5xf32>, tensor<5xf32>) -> tensor<8x5xf32>
  %2 = loom.relu %0 : (tensor<8x5xf32>) -> tensor<8x5xf32>
  return %1, %2 : tensor<8x5xf32>, tensor<8x5xf32>
}
