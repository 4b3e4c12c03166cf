func.func @axpy(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>):
    %c = loom.constant dense<2.0> : tensor<f32>
    %m = loom.mul %a, %c : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %s = loom.add %m, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}
