func.func @concat_broadcast(%cache: tensor<?x4x?x8xf32>, %new: tensor<?x4x1x8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>, tensor<8xf32>, tensor<4x3xf32>) {
  %0 = loom.concat %cache, %new {dim = 2 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x?x8xf32>
  %1 = loom.broadcast_as %b, %new : (tensor<8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x1x8xf32>
  %2 = loom.sum_to %1, %b : (tensor<?x4x1x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = loom.constant dense<1.0> : tensor<4x1xf32>
  %c = loom.constant dense<2.0> : tensor<4x2xf32>
  %3 = loom.concat %a, %c {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>, tensor<8xf32>, tensor<4x3xf32>
}
