func.func @ffn_dropout(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>,
                       %w2: tensor<32x64xf32>, %b2: tensor<32xf32>, %seed: tensor<i64>) -> tensor<?x?x32xf32> {
  %0 = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %1 = loom.add %0, %b1 : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = loom.relu %1 : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %3 = loom.dropout %2, %seed {rate = 0.1 : f64, offset = 0 : i64} : (tensor<?x?x64xf32>, tensor<i64>) -> tensor<?x?x64xf32>
  %4 = loom.matmul %3, %w2 {transpose_rhs} : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %5 = loom.add %4, %b2 : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %6 = loom.dropout %5, %seed {rate = 0.1 : f64, offset = 1 : i64} : (tensor<?x?x32xf32>, tensor<i64>) -> tensor<?x?x32xf32>
  %7 = loom.add %x, %6 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %7 : tensor<?x?x32xf32>
}
