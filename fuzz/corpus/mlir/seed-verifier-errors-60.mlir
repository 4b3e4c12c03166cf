func.func @f(%q: tensor<3x2x1x8xf32>, %k: tensor<5x2x3x8xf32>) {
  %o, %l = loom.attention %q, %k, %k {keys_position_major, scale = 0.5 : f64} : tensor<3x2x1x8xf32>, tensor<5x2x3x8xf32>, tensor<5x2x3x8xf32> -> tensor<3x2x1x8xf32>, tensor<3x2x1xf32>
  return
}
