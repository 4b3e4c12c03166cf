func.func @softmax64(%x: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = loom.fusion(%x) : (tensor<?x?xf64>) -> tensor<?x?xf64> {
  ^bb0(%a: tensor<?x?xf64>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf64>) -> tensor<?x?xf64>
    loom.yield %s : tensor<?x?xf64>
  }
  return %r : tensor<?x?xf64>
}
