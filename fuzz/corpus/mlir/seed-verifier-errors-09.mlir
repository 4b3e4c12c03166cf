func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  %0 = loom.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}
