func.func @center(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %m = loom.reduce_mean %a [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
    %d = loom.sub %a, %m : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    loom.yield %d : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}
