func.func @f(%a: tensor<3xi32>) {
  %0 = loom.exp %a : (tensor<3xi32>) -> tensor<3xi32>
  return
}
