func.func @add_layer_norm(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x1xf32>) {
  %r:2 = loom.fusion(%x, %y, %gamma, %beta) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x1xf32>) {
  ^bb0(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>, %g: tensor<8xf32>, %be: tensor<8xf32>):
    %s = loom.add %a, %b : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    %n = loom.layer_norm %s, %g, %be {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %mean = loom.reduce_mean %s [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
    loom.yield %n, %mean : tensor<?x?x8xf32>, tensor<?x?x1xf32>
  }
  return %r#0, %r#1 : tensor<?x?x8xf32>, tensor<?x?x1xf32>
}
