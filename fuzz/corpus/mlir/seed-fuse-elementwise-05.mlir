func.func @column_sum(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = loom.reduce_sum %e [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %n = loom.neg %r : (tensor<8xf32>) -> tensor<8xf32>
  return %n : tensor<8xf32>
}
