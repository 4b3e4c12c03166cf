func.func @decoder_cache(%q: tensor<?x?x2x1x16xf32>, %k: tensor<?x?x?x2x16xf32>,
                         %v: tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 3, 0, 4] : (tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x?x16xf32>
  %vt = loom.transpose %v [1, 2, 3, 0, 4] : (tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x?x16xf32>
  %o, %lse = loom.attention %q, %kt, %vt {scale = 0.25 : f64} : tensor<?x?x2x1x16xf32>, tensor<?x?x2x?x16xf32>, tensor<?x?x2x?x16xf32> -> tensor<?x?x2x1x16xf32>, tensor<?x?x2x1xf32>
  return %o : tensor<?x?x2x1x16xf32>
}
