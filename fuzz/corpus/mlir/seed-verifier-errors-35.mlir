func.func @f(%x: tensor<6x4xf32>) {
  %0 = loom.slice %x {dim = 2 : i64, start = 0 : i64, end = 1 : i64} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}
