// loom-optimizer refuses a module it cannot build a step from, saying why.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-optimizer

// expected-error @below {{loom-optimizer: no function @loss_grad (run loom-autodiff first)}}
module {
  func.func @loss(%w: tensor<3xf32>) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}

// -----

// expected-error @below {{loom-optimizer: parameter "w" has no gradient result}}
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> (tensor<f32> {loom.output = "loss"}) {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @below {{loom-optimizer: @loss_grad has no result named "loss"}}
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> tensor<f32> {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
