func.func @qkv(%x: tensor<?x?x4xf32>, %w: tensor<12x4xf32>, %b: tensor<12xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<?x?x4xf32>, tensor<12x4xf32>) -> tensor<?x?x12xf32>
  %s = loom.add %b, %p : (tensor<12xf32>, tensor<?x?x12xf32>) -> tensor<?x?x12xf32>
  %q = loom.slice %s {dim = 2 : i64, start = 0 : i64, end = 4 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  %k = loom.slice %s {dim = 2 : i64, start = 4 : i64, end = 8 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  %v = loom.slice %s {dim = 2 : i64, start = 8 : i64, end = 0 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  return %q, %k, %v : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}
