func.func @through_call(%x: tensor<f32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %y = func.call @calls(%x) : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}
