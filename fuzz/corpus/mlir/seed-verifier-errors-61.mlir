func.func @f(%q: tensor<3x2x1x8xf32>, %k: tensor<5x3x2x8xf32>, %seed: tensor<i64>) {
  %o, %l = loom.attention %q, %k, %k seed(%seed : tensor<i64>) {keys_position_major, scale = 0.5 : f64, dropout_rate = 0.1 : f64} : tensor<3x2x1x8xf32>, tensor<5x3x2x8xf32>, tensor<5x3x2x8xf32> -> tensor<3x2x1x8xf32>, tensor<3x2x1xf32>
  return
}
