func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}
