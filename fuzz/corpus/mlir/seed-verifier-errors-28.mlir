func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.reshape %x [-1, -1] : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}
