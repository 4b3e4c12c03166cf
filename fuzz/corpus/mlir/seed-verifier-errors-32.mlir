func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.expand_dims %x [3] : (tensor<6x4xf32>) -> tensor<6x4x1xf32>
  return
}
