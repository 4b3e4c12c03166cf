func.func @f(%a: tensor<2x3xf32>) {
  %0 = loom.softmax %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
