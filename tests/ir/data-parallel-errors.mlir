// loom-data-parallel refuses what it cannot average, saying why, and leaves
// nothing half done.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-data-parallel
// RUN: not loom-opt %s --split-input-file --loom-data-parallel="bucket-bytes=0" 2>&1 | FileCheck %s --check-prefix=BUCKET
// BUCKET: loom-data-parallel: bucket-bytes must be positive, got 0

// expected-error @below {{loom-data-parallel: no function @loss_grad (run loom-autodiff first)}}
module {
  func.func @loss(%w: tensor<3xf32>) -> tensor<3xf32> {
    return %w : tensor<3xf32>
  }
}

// -----

// expected-error @below {{loom-data-parallel: @loss_grad has no result named 'loss'}}
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> (tensor<3xf32> {loom.output = "grad.w"}) {
  return %w : tensor<3xf32>
}

// -----

// expected-error @below {{loom-data-parallel: @loss_grad returns no gradient}}
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}) -> (tensor<f32> {loom.output = "loss"}) {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Gradients are parameters' and parameters have static shapes; buckets are
// sized from them.
// expected-error @below {{loom-data-parallel: "grad.x" has a dynamic shape 'tensor<?x3xf32>'; buckets are sized from static gradient shapes}}
func.func @loss_grad(%x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<?x3xf32> {loom.output = "grad.x"}) {
  %0 = loom.reduce_sum %x [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  return %0, %x : tensor<f32>, tensor<?x3xf32>
}

// -----

func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.reduce_sum %w [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  // expected-error @below {{loom-data-parallel: a second op marked loom.token_count}}
  %1 = loom.reduce_sum %w [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  %2 = loom.add %0, %1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %2, %w : tensor<f32>, tensor<3xf32>
}

// -----

// Run twice, it would average twice.
// expected-error @below {{loom-data-parallel: @loss_grad already has all-reduces}}
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.reduce_sum %w [0] : (tensor<3xf32>) -> tensor<f32>
  %1 = loom.all_reduce %w : tensor<3xf32>
  return %0, %1 : tensor<f32>, tensor<3xf32>
}

// -----

// The loom.all_reduce verifier: results of the operands' types.
func.func @mismatch(%w: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @below {{'loom.all_reduce' op result #0 must have its operand's type 'tensor<3xf32>', got 'tensor<4xf32>'}}
  %0 = "loom.all_reduce"(%w) : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
