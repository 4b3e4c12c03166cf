func.func @f(%t: tensor<f32>, %ids: tensor<3xi32>) {
  %0 = loom.gather %t, %ids : (tensor<f32>, tensor<3xi32>) -> tensor<3xf32>
  return
}
