func.func @f(%a: tensor<2x3xf32>) {
  %0 = loom.log_softmax %a {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
