func.func @unbounded(%x: tensor<?x2xf32> {loom.dims = ["batch", ""]}) -> tensor<?x3xf32> {
  %0 = loom.reshape %x [-1, 3] : (tensor<?x2xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
