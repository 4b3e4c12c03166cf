func.func @multi_output(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = loom.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = loom.add %e, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m, %s : tensor<4x8xf32>, tensor<4x8xf32>
}
