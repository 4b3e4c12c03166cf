func.func @unnamed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = loom.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
