func.func @f(%l: tensor<2x5xf32>, %t: tensor<2xi32>) {
  %0 = loom.cross_entropy %l, %t {label_smoothing = 1.5 : f64, ignore_index = 0 : i64} : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<2xf32>
  return
}
