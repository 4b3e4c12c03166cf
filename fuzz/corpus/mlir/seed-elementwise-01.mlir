func.func @compare_select(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %c = loom.compare lt, %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  %s = loom.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %k = loom.constant dense<1.0> : tensor<f32>
  %r = loom.add %s, %k : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
