func.func @mismatch(%w: tensor<3xf32>) -> tensor<4xf32> {
  %0 = "loom.all_reduce"(%w) : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
