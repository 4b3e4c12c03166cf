func.func @f(%a: tensor<2x3xf32>) {
  %0 = loom.exp %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}
