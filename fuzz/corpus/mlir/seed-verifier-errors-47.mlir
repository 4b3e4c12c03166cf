func.func @f(%u: tensor<3x5xf32>, %ids: tensor<3xi32>, %t: tensor<10x4xf32>) {
  %0 = loom.scatter_add %u, %ids, %t : (tensor<3x5xf32>, tensor<3xi32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return
}
