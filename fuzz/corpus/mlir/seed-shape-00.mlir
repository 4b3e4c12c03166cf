func.func @heads(%x: tensor<?x?x512xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x?x512xf32>) {
  %0 = loom.reshape %x [0, 0, 8, 64] : (tensor<?x?x512xf32>) -> tensor<?x?x8x64xf32>
  %1 = loom.transpose %0 [0, 2, 1, 3] : (tensor<?x?x8x64xf32>) -> tensor<?x8x?x64xf32>
  %2 = loom.reshape_as %0, %x : (tensor<?x?x8x64xf32>, tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
  return %1, %2 : tensor<?x8x?x64xf32>, tensor<?x?x512xf32>
}
