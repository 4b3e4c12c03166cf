func.func @f(%x: tensor<6x4xf32>, %y: tensor<5xf32>) {
  %0 = loom.reshape_as %x, %y : (tensor<6x4xf32>, tensor<5xf32>) -> tensor<5xf32>
  return
}
