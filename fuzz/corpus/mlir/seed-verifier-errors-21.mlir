func.func @f(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  %0 = loom.dropout %x, %s {rate = 0.5 : f64, offset = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}
