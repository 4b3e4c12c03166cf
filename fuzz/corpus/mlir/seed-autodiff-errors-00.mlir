func.func @two_results(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>)
    attributes {loom.differentiable} {
  return %x, %x : tensor<f32>, tensor<f32>
}
