func.func @only_k(%q: tensor<3x2x1x16xf32>, %k: tensor<5x3x2x16xf32>,
                  %v: tensor<3x2x5x16xf32>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %o, %lse = loom.attention %q, %kt, %v {scale = 0.25 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}
