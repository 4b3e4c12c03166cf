func.func @append(%k: tensor<?x2x?x4xf32> {loom.input = "self_k.0", loom.dims = ["batch", "", "cache_len", ""]},
                  %new: tensor<?x2x1x4xf32> {loom.input = "new", loom.dims = ["batch", "", "", ""]})
    -> (tensor<?x2x?x4xf32> {loom.output = "self_k.0"}) {
  %0 = loom.concat %k, %new {dim = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x1x4xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}
