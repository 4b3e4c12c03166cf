func.func @f(%x: tensor<2x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  %0 = loom.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}
