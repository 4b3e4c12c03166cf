func.func @f(%x: tensor<?x4xf32>) {
  %0 = loom.slice %x {dim = 0 : i64, start = 3 : i64, end = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}
