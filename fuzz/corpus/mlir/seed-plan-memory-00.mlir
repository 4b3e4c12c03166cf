func.func @mlp(%w1: tensor<32x16xf32> {loom.param = "w1"},
               %w2: tensor<16x32xf32> {loom.param = "w2"},
               %x: tensor<?x?x16xf32> {loom.input = "x", loom.dims = ["batch", "len", ""]})
    -> (tensor<?x16xf32> {loom.output = "y"}) {
  %a = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %b = loom.reduce_sum %a [2] keep_dims : (tensor<?x?x32xf32>) -> tensor<?x?x1xf32>
  %c = loom.sub %a, %b : (tensor<?x?x32xf32>, tensor<?x?x1xf32>) -> tensor<?x?x32xf32>
  %d = loom.matmul %c, %w2 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %d2 = loom.reshape %d [-1, 16] : (tensor<?x?x16xf32>) -> tensor<?x16xf32>
  %e = loom.matmul %d2, %w1 {transpose_rhs} : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  %y = loom.matmul %e, %w2 {transpose_rhs} : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
