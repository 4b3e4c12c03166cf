func.func @f(%c: tensor<5xi1>, %a: tensor<2xf32>, %b: tensor<2xf32>) {
  %0 = loom.select %c, %a, %b : (tensor<5xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}
