func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.reshape %x [-3, 8] : (tensor<6x4xf32>) -> tensor<3x8xf32>
  return
}
