func.func @late_gamma(%x: tensor<6x32xf32>, %f: tensor<6x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>)
    -> (tensor<6x32xf32>, tensor<6x32xf32>, tensor<6x32xf32>) {
  %s = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %g2 = loom.mul %g, %g : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %y = loom.layer_norm %s, %g2, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  %r = loom.add %s, %y : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>

  %t = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %u = loom.mul %t, %t : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %g3 = loom.mul %g, %g : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %z = loom.layer_norm %t, %g3, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  return %r, %u, %z : tensor<6x32xf32>, tensor<6x32xf32>, tensor<6x32xf32>
}
