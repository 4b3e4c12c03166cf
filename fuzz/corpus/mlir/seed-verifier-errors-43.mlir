func.func @f() {
  %0 = loom.concat {dim = 0 : i64} : () -> tensor<2xf32>
  return
}
