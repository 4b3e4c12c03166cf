func.func @attention_keys_position_major(%q: tensor<?x?x4x1x8xf32>, %k: tensor<?x?x?x4x8xf32>) -> tensor<?x?x4x1x8xf32> {
  %o, %l = loom.attention %q, %k, %k {keys_position_major, scale = 0.125 : f64} : tensor<?x?x4x1x8xf32>, tensor<?x?x?x4x8xf32>, tensor<?x?x?x4x8xf32> -> tensor<?x?x4x1x8xf32>, tensor<?x?x4x1xf32>
  return %o : tensor<?x?x4x1x8xf32>
}
