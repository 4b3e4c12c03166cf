func.func @f(%a: tensor<2x3xf32>) {
  %0 = loom.reduce_sum %a [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}
