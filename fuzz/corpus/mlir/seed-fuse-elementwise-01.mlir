func.func @row_center(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %m = loom.reduce_mean %x [1] : (tensor<?x8xf32>) -> tensor<?xf32>
  %e = loom.expand_dims %m [1] : (tensor<?xf32>) -> tensor<?x1xf32>
  %d = loom.sub %x, %e : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}
