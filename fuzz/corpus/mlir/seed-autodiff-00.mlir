func.func @loss(%w: tensor<3xf32> {loom.param = "scale"}, %ids: tensor<2xi32>,
                %table: tensor<4x3xf32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %e = loom.gather %table, %ids : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  %p = loom.mul %e, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %q = loom.mul %p, %p : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_sum %q [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
