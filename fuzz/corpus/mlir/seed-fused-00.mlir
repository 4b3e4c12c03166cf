func.func @attention(%q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x8xf32>,
                     %mask: tensor<?x1x1x?xf32>, %seed: tensor<i64>, %dout: tensor<?x4x?x8xf32>)
    -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  %out, %lse = loom.attention %q, %k, %v mask(%mask : tensor<?x1x1x?xf32>) seed(%seed : tensor<i64>) {scale = 0.35355339059327373 : f64, causal, dropout_rate = 0.1 : f64, dropout_offset = 5 : i64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?xf32>
  %dq, %dk, %dv = loom.attention_grad %q, %k, %v, %out, %lse, %dout mask(%mask : tensor<?x1x1x?xf32>) seed(%seed : tensor<i64>) {scale = 0.35355339059327373 : f64, causal, dropout_rate = 0.1 : f64, dropout_offset = 5 : i64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
  %o2, %l2 = loom.attention %q, %k, %v {scale = 0.125 : f64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?xf32>
  return %out, %dq, %dk, %o2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}
