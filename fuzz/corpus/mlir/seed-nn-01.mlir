func.func @reductions(%x: tensor<?x5x7xf32>) -> (tensor<?x1x1xf32>, tensor<5xf32>, tensor<?x5xf32>) {
  %0 = loom.reduce_sum %x [1, 2] keep_dims : (tensor<?x5x7xf32>) -> tensor<?x1x1xf32>
  %1 = loom.reduce_mean %x [0, 2] : (tensor<?x5x7xf32>) -> tensor<5xf32>
  %2 = loom.reduce_max %x [2] : (tensor<?x5x7xf32>) -> tensor<?x5xf32>
  return %0, %1, %2 : tensor<?x1x1xf32>, tensor<5xf32>, tensor<?x5xf32>
}
