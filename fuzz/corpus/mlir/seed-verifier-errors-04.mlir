func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  %0 = loom.compare eq, %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xi1>
  return
}
