func.func @not_scalar(%x: tensor<3xf32>) -> tensor<3xf32>
    attributes {loom.differentiable} {
  return %x : tensor<3xf32>
}
