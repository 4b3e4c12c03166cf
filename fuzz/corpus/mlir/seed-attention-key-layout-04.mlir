func.func @dropout(%q: tensor<3x2x1x16xf32>, %k: tensor<5x3x2x16xf32>,
                   %v: tensor<5x3x2x16xf32>, %seed: tensor<i64>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %vt = loom.transpose %v [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %o, %lse = loom.attention %q, %kt, %vt seed(%seed : tensor<i64>) {scale = 0.25 : f64, dropout_rate = 0.1 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}
