func.func @embedding(%table: tensor<100x16xf32>, %ids: tensor<?x?xi32>) -> (tensor<?x?x16xf32>, tensor<100x16xf32>) {
  %0 = loom.gather %table, %ids : (tensor<100x16xf32>, tensor<?x?xi32>) -> tensor<?x?x16xf32>
  %1 = loom.scatter_add %0, %ids, %table : (tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<100x16xf32>) -> tensor<100x16xf32>
  return %0, %1 : tensor<?x?x16xf32>, tensor<100x16xf32>
}
