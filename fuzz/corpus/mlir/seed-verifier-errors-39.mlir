func.func @f(%g: tensor<2xf32>, %x: tensor<6x4xf32>) {
  %0 = loom.slice_grad %g, %x {dim = 0 : i64, start = 1 : i64, end = 3 : i64} : (tensor<2xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}
