func.func @f(%l: tensor<2x5xf32>, %t: tensor<2x3xi32>) {
  %0 = loom.cross_entropy %l, %t {label_smoothing = 0.0 : f64, ignore_index = 0 : i64} : (tensor<2x5xf32>, tensor<2x3xi32>) -> tensor<2xf32>
  return
}
