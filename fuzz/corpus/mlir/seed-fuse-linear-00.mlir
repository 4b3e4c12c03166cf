func.func @ffn(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>,
               %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %0 = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %1 = loom.add %0, %b1 : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = loom.relu %1 : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %3 = loom.matmul %2, %w2 {transpose_rhs} : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %4 = loom.add %3, %b2 : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %5 = loom.add %x, %4 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %5 : tensor<?x?x32xf32>
}
