func.func @f(%a: tensor<*xf32>, %b: tensor<3xf32>) {
  %0 = loom.sub %a, %b : (tensor<*xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}
