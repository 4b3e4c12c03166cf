func.func @pre_norm(%x: tensor<6x32xf32>, %f: tensor<6x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<6x32xf32> {
  %s = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %y = loom.layer_norm %s, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  %m = loom.mul %y, %y : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %r = loom.add %s, %m : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  return %r : tensor<6x32xf32>
}
