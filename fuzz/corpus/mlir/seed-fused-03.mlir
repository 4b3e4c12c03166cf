func.func @fusion(%m: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %r:2 = loom.fusion(%m, %g) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %c = loom.constant dense<0.9> : tensor<f32>
    %0 = loom.mul %a, %c : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %1 = loom.add %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %2 = loom.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    loom.yield %1, %2 : tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}
