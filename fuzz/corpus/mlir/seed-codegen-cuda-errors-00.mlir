func.func @bias_update(%x: tensor<?x?xf32>, %b: tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  %r:2 = loom.fusion(%x, %b) : (tensor<?x?xf32>, tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<1x?xf32>) {
  ^bb0(%a: tensor<?x?xf32>, %c: tensor<1x?xf32>):
    %s = loom.add %a, %c : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
    %two = loom.constant dense<2.0> : tensor<f32>
    %d = loom.mul %c, %two : (tensor<1x?xf32>, tensor<f32>) -> tensor<1x?xf32>
    loom.yield %s, %d : tensor<?x?xf32>, tensor<1x?xf32>
  }
  return %r#0, %r#1 : tensor<?x?xf32>, tensor<1x?xf32>
}
