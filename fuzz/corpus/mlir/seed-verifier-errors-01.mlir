func.func @f(%a: tensor<3xf32>, %b: tensor<3xf64>) {
  %0 = loom.mul %a, %b : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  return
}
