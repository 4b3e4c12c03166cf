func.func @axpy_bias(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %bias: tensor<1x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x, %y, %bias) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<1x?xf32>):
    %two = loom.constant dense<2.0> : tensor<f32>
    %m = loom.mul %a, %two : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %s = loom.add %m, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %t = loom.add %s, %c : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
    loom.yield %t : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}
