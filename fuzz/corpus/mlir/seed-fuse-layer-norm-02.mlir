func.func @post_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s = loom.add %x, %f : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %y = loom.layer_norm %s, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}
