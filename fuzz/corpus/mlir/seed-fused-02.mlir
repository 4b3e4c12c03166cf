func.func @add_layer_norm(%x: tensor<?x16xf32>, %r: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %s, %n = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  return %s, %n : tensor<?x16xf32>, tensor<?x16xf32>
}
