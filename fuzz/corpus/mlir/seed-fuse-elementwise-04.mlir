func.func @cycle(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = loom.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = loom.add %e, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = loom.tanh %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}
