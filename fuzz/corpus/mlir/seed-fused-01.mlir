func.func @linear(%x: tensor<?x?x16xf32>, %w1: tensor<64x16xf32>, %b1: tensor<64xf32>,
                  %w2: tensor<16x64xf32>, %b2: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %h = loom.linear %x, %w1 bias(%b1 : tensor<64xf32>) activation relu : tensor<?x?x16xf32>, tensor<64x16xf32> -> tensor<?x?x64xf32>
  %y = loom.linear %h, %w2 bias(%b2 : tensor<16xf32>) residual(%x : tensor<?x?x16xf32>) : tensor<?x?x64xf32>, tensor<16x64xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
