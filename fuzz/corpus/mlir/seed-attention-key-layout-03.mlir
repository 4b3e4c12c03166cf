func.func @other_permutation(%q: tensor<3x2x1x16xf32>, %k: tensor<5x2x3x16xf32>,
                             %v: tensor<5x2x3x16xf32>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [2, 1, 0, 3] : (tensor<5x2x3x16xf32>) -> tensor<3x2x5x16xf32>
  %vt = loom.transpose %v [2, 1, 0, 3] : (tensor<5x2x3x16xf32>) -> tensor<3x2x5x16xf32>
  %o, %lse = loom.attention %q, %kt, %vt {scale = 0.25 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}
