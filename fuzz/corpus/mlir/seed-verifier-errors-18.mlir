func.func @f(%x: tensor<f32>, %g: tensor<1xf32>, %b: tensor<1xf32>) {
  %0 = loom.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return
}
