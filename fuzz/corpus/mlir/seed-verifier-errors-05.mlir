func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf64>) {
  %0 = loom.select %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf64>) -> tensor<2xf32>
  return
}
