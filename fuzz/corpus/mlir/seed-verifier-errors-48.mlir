func.func @f(%u: tensor<3xf32>, %ids: tensor<3xi32>, %t: tensor<f32>) {
  %0 = loom.scatter_add %u, %ids, %t : (tensor<3xf32>, tensor<3xi32>, tensor<f32>) -> tensor<f32>
  return
}
