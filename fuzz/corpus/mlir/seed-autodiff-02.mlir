func.func @attention(%x: tensor<?x?x8xbf16>, %seed: tensor<i64>) -> tensor<bf16>
    attributes {loom.differentiable} {
  %s = loom.matmul %x, %x {transpose_rhs} : (tensor<?x?x8xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x?xbf16>
  %m = loom.causal_mask %x {dim = 1 : i64} : tensor<?x?x8xbf16> -> tensor<?x?xbf16>
  %sm = loom.add %s, %m : (tensor<?x?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?x?xbf16>
  %p = loom.softmax %sm {axis = 2 : i64} : (tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16>
  %pd = loom.dropout %p, %seed {rate = 1.0e-01 : f64, offset = 3 : i64} : (tensor<?x?x?xbf16>, tensor<i64>) -> tensor<?x?x?xbf16>
  %o = loom.matmul %pd, %x : (tensor<?x?x?xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x8xbf16>
  %l = loom.reduce_mean %o [0, 1, 2] : (tensor<?x?x8xbf16>) -> tensor<bf16>
  return %l : tensor<bf16>
}
