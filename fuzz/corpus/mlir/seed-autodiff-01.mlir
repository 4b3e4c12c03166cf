func.func @partial(%x: tensor<?x2xf32>, %unused: tensor<?xf32>, %c: tensor<2xf32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %k = loom.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %y = loom.mul %x, %k : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %s = loom.reduce_sum %y [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %i = loom.cast %c : tensor<2xf32> to tensor<2xi32>
  %f = loom.cast %i : tensor<2xi32> to tensor<2xf32>
  %t = loom.reduce_sum %f [0] : (tensor<2xf32>) -> tensor<f32>
  %l = loom.add %s, %t : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
