func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.reshape %x [6, 4, 0] : (tensor<6x4xf32>) -> tensor<6x4x1xf32>
  return
}
