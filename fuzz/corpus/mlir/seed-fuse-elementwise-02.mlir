func.func @siblings(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>) {
  %e = loom.exp %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m1 = loom.matmul %e, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %t = loom.tanh %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m2 = loom.matmul %t, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %r = loom.reduce_max %x [1] : (tensor<?x8xf32>) -> tensor<?xf32>
  return %m1, %m2, %r : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>
}
