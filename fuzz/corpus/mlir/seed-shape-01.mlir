func.func @reshape_infer(%x: tensor<6x4xf32>) -> (tensor<3x8xf32>, tensor<2x1x3x4xf32>) {
  %0 = loom.reshape %x [-1, 8] : (tensor<6x4xf32>) -> tensor<3x8xf32>
  %r = loom.reshape %x [2, 3, 4] : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %1 = loom.expand_dims %r [1] : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  return %0, %1 : tensor<3x8xf32>, tensor<2x1x3x4xf32>
}
