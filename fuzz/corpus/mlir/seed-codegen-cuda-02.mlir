func.func @dropout(%x: tensor<?x64xf32>, %seed: tensor<i64>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %r = loom.fusion(%x, %seed) : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %s: tensor<i64>):
    %d = loom.dropout %a, %s {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32>
    loom.yield %d : tensor<?x64xf32>
  }
  %q = loom.fusion(%x, %seed) : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %s: tensor<i64>):
    %d = loom.dropout %a, %s {rate = 0.1 : f64, offset = 4 : i64} : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32>
    loom.yield %d : tensor<?x64xf32>
  }
  return %r, %q : tensor<?x64xf32>, tensor<?x64xf32>
}
