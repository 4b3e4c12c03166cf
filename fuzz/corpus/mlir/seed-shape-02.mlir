func.func @slices(%tgt: tensor<?x?xi32>, %w: tensor<96x32xf32>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<32x32xf32>, tensor<96x32xf32>) {
  %0 = loom.slice %tgt {dim = 1 : i64, start = 0 : i64, end = -1 : i64} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %1 = loom.slice %tgt {dim = 1 : i64, start = 1 : i64, end = 0 : i64} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %2 = loom.slice %w {dim = 0 : i64, start = 32 : i64, end = 64 : i64} : (tensor<96x32xf32>) -> tensor<32x32xf32>
  %3 = loom.slice_grad %2, %w {dim = 0 : i64, start = 32 : i64, end = 64 : i64} : (tensor<32x32xf32>, tensor<96x32xf32>) -> tensor<96x32xf32>
  return %0, %1, %2, %3 : tensor<?x?xi32>, tensor<?x?xi32>, tensor<32x32xf32>, tensor<96x32xf32>
}
