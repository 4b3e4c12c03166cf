func.func @calls(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
