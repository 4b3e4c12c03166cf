func.func @total(%x: tensor<?x?xf32>) -> tensor<f32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.reduce_sum %a [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
    loom.yield %s : tensor<f32>
  }
  return %r : tensor<f32>
}
