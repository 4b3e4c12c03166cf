func.func @softmax(%x: tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %r = loom.fusion(%x) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  ^bb0(%a: tensor<?x?x?xf32>):
    %p = loom.softmax %a {axis = 2 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    loom.yield %p : tensor<?x?x?xf32>
  }
  %q = loom.fusion(%r) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  ^bb0(%a: tensor<?x?x?xf32>):
    %p = loom.softmax %a {axis = 2 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    loom.yield %p : tensor<?x?x?xf32>
  }
  return %r, %q : tensor<?x?x?xf32>, tensor<?x?x?xf32>
}
