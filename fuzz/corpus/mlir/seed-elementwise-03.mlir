func.func @casts_and_constants(%ids: tensor<?x?xi32>) -> (tensor<?x?xf32>, tensor<?x?xi1>, tensor<2x2xbf16>, tensor<3xi64>) {
  %0 = loom.cast %ids : tensor<?x?xi32> to tensor<?x?xf32>
  %1 = loom.cast %ids : tensor<?x?xi32> to tensor<?x?xi1>
  %2 = loom.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  %3 = loom.constant dense<[1, 2, 3]> : tensor<3xi64>
  return %0, %1, %2, %3 : tensor<?x?xf32>, tensor<?x?xi1>, tensor<2x2xbf16>, tensor<3xi64>
}
