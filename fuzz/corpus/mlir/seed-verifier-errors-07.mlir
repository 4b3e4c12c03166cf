func.func @f(%a: tensor<2x3xf32>) {
  %0 = loom.cast %a : tensor<2x3xf32> to tensor<3x2xi32>
  return
}
