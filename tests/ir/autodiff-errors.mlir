// loom-autodiff refuses what it cannot differentiate, saying why.
// RUN: loom-opt %s --loom-autodiff -split-input-file -verify-diagnostics

// expected-error @+1 {{loss function must return a single scalar float loss, it returns 2 values}}
func.func @two_results(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>)
    attributes {loom.differentiable} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{loss function must return a scalar float tensor (e.g. tensor<f32>), it returns 'tensor<3xf32>'}}
func.func @not_scalar(%x: tensor<3xf32>) -> tensor<3xf32>
    attributes {loom.differentiable} {
  return %x : tensor<3xf32>
}

// -----

// expected-error @+1 {{loss function must return a scalar float tensor (e.g. tensor<f32>), it returns 'tensor<i32>'}}
func.func @integer_loss(%x: tensor<i32>) -> tensor<i32>
    attributes {loom.differentiable} {
  return %x : tensor<i32>
}

// -----

// expected-error @+1 {{loss function has no body to differentiate}}
func.func private @external(%x: tensor<f32>) -> tensor<f32>
    attributes {loom.differentiable}

// -----

func.func @no_rule(%x: tensor<2x3xf32>, %t: tensor<2xi32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %g = loom.constant dense<1.0> : tensor<2xf32>
  // expected-error @+1 {{'loom.cross_entropy_grad' op has no gradient rule, but the loss depends on it through a floating-point operand}}
  %d = loom.cross_entropy_grad %x, %t, %g {label_smoothing = 0.0 : f64, ignore_index = -1 : i64} : (tensor<2x3xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_sum %d [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @calls(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

func.func @through_call(%x: tensor<f32>) -> tensor<f32>
    attributes {loom.differentiable} {
  // expected-error @+1 {{'func.call' op has no gradient rule, but the loss depends on it through a floating-point operand}}
  %y = func.call @calls(%x) : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// expected-error @+1 {{cannot create @taken_grad: the module already has a symbol of that name}}
func.func @taken(%x: tensor<f32>) -> tensor<f32>
    attributes {loom.differentiable} {
  return %x : tensor<f32>
}

func.func @taken_grad(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}

// -----

// Every loss in a module is checked, so each one's error is reported.
// expected-error @+1 {{it returns 2 values}}
func.func @first(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>)
    attributes {loom.differentiable} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// expected-error @+1 {{it returns 'tensor<2xf32>'}}
func.func @second(%x: tensor<2xf32>) -> tensor<2xf32>
    attributes {loom.differentiable} {
  return %x : tensor<2xf32>
}

// -----

// Products of bf16 factors with f32 sums are what loom-mixed-precision makes
// after autodiff; a loss written with one is refused, not differentiated
// into gradients of the wrong type.
func.func @mixed(%x: tensor<2x8xbf16>, %w: tensor<4x8xbf16>) -> tensor<f32>
    attributes {loom.differentiable} {
  // expected-error @+1 {{'loom.linear' op sums narrow products in a wider type, as loom-mixed-precision builds it after autodiff; such a linear has no gradient rule}}
  %y = loom.linear %x, %w : tensor<2x8xbf16>, tensor<4x8xbf16> -> tensor<2x4xf32>
  %s = loom.reduce_sum %y [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Narrow keys and values are a decoder's caches: inference only.
func.func @narrow_keys(%q: tensor<2x1x8xf32>, %k: tensor<2x5x8xbf16>) -> tensor<f32>
    attributes {loom.differentiable} {
  // expected-error @+1 {{'loom.attention' op keys and values of another element type than q are for inference (narrow decoder caches) and have no gradient rule}}
  %o, %l = loom.attention %q, %k, %k {scale = 0.5 : f64} : tensor<2x1x8xf32>, tensor<2x5x8xbf16>, tensor<2x5x8xbf16> -> tensor<2x1x8xf32>, tensor<2x1xf32>
  %s = loom.reduce_sum %o [0, 1, 2] : (tensor<2x1x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
