func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.transpose %x [0, 1, 2] : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}
