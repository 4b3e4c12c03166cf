func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.reshape %x [5, 5] : (tensor<6x4xf32>) -> tensor<5x5xf32>
  return
}
