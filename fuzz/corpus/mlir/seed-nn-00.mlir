func.func @matmuls(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>, %q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x4x?x?xf32>, tensor<?x4x8x8xf32>) {
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %1 = loom.matmul %q, %k {transpose_rhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  %2 = loom.matmul %q, %k {transpose_lhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x8x8xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x4x?x?xf32>, tensor<?x4x8x8xf32>
}
