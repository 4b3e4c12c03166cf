func.func @binary(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = loom.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %1 = loom.sub %0, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %2 = loom.mul %1, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %3 = loom.div %2, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %4 = loom.maximum %3, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %5 = loom.minimum %4, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = loom.pow %5, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %6 : tensor<?x4xf32>
}
