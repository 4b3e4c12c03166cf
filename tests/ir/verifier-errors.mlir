// Every verifier and shape-inference error of the loom dialect, with the
// message that names the problem. Shape inference reports the problem, then
// MLIR's InferTypeOpInterface verifier adds that inference failed.
// RUN: loom-opt %s --split-input-file --verify-diagnostics

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'loom.add' cannot broadcast 2x3 with 4}}
  // expected-error @+1 {{'loom.add' op failed to infer returned types}}
  %0 = loom.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f(%a: tensor<3xf32>, %b: tensor<3xf64>) {
  // expected-error @+2 {{'loom.mul' needs operands of one element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'loom.mul' op failed to infer returned types}}
  %0 = loom.mul %a, %b : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  return
}

// -----

func.func @f(%a: tensor<*xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'loom.sub' needs ranked tensors, got 'tensor<*xf32>'}}
  // expected-error @+1 {{'loom.sub' op failed to infer returned types}}
  %0 = loom.sub %a, %b : (tensor<*xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.exp' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error @+1 {{'loom.exp' op failed to infer returned types}}
  %0 = loom.exp %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'loom.compare' cannot broadcast 2 with 3}}
  // expected-error @+1 {{'loom.compare' op failed to infer returned types}}
  %0 = loom.compare eq, %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xi1>
  return
}

// -----

func.func @f(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf64>) {
  // expected-error @+2 {{'loom.select' needs both branches of one element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'loom.select' op failed to infer returned types}}
  %0 = loom.select %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf64>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%c: tensor<5xi1>, %a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{'loom.select' cannot broadcast 5 with 2}}
  // expected-error @+1 {{'loom.select' op failed to infer returned types}}
  %0 = loom.select %c, %a, %b : (tensor<5xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'loom.cast' op changes the shape from 2x3 to 3x2; a cast keeps the shape}}
  %0 = loom.cast %a : tensor<2x3xf32> to tensor<3x2xi32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'loom.matmul' contraction sizes differ: 2x3 has K=3 but 4x5 has K=4}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'loom.matmul' contraction sizes differ: 2x3 (transposed) has K=2 but 4x3 (transposed) has K=3}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'loom.matmul' needs operands of rank 2 or more, got 3 and 3x4}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x5x3xf32>, %b: tensor<4x3x6xf32>) {
  // expected-error @+2 {{'loom.matmul' batch dims do not broadcast: 2x5x3 and 4x3x6}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<2x5x3xf32>, tensor<4x3x6xf32>) -> tensor<2x5x6xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf64>) {
  // expected-error @+2 {{'loom.matmul' needs operands of one element type, got 'f32' and 'f64'}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.reduce_sum' reduces dim 2 of a rank-2 tensor}}
  // expected-error @+1 {{'loom.reduce_sum' op failed to infer returned types}}
  %0 = loom.reduce_sum %a [2] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.reduce_max' lists dim 1 twice}}
  // expected-error @+1 {{'loom.reduce_max' op failed to infer returned types}}
  %0 = loom.reduce_max %a [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.softmax' axis 2 is out of range for a rank-2 tensor}}
  // expected-error @+1 {{'loom.softmax' op failed to infer returned types}}
  %0 = loom.softmax %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.log_softmax' axis -1 is out of range for a rank-2 tensor}}
  // expected-error @+1 {{'loom.log_softmax' op failed to infer returned types}}
  %0 = loom.log_softmax %a {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'loom.layer_norm' needs gamma and beta of shape [8] and element type 'f32', got 'tensor<4xf32>'}}
  // expected-error @+1 {{'loom.layer_norm' op failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %g: tensor<1xf32>, %b: tensor<1xf32>) {
  // expected-error @+2 {{'loom.layer_norm' needs rank 1 or more}}
  // expected-error @+1 {{'loom.layer_norm' op failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'loom.layer_norm' epsilon must be a finite number, 0 or more, got -1}}
  // expected-error @+1 {{'loom.layer_norm' op failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %b {epsilon = -1.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+2 {{'loom.dropout' rate must be in [0, 1), got 1}}
  // expected-error @+1 {{'loom.dropout' op failed to infer returned types}}
  %0 = loom.dropout %x, %s {rate = 1.0 : f64, offset = 0 : i64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+2 {{'loom.dropout' seed must be tensor<i64>}}
  // expected-error @+1 {{'loom.dropout' op failed to infer returned types}}
  %0 = loom.dropout %x, %s {rate = 0.5 : f64, offset = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%l: tensor<2x5xf32>, %t: tensor<2x3xi32>) {
  // expected-error @+2 {{'loom.cross_entropy' needs logits [..., C] and targets [...], got 2x5 and 2x3}}
  // expected-error @+1 {{'loom.cross_entropy' op failed to infer returned types}}
  %0 = loom.cross_entropy %l, %t {label_smoothing = 0.0 : f64, ignore_index = 0 : i64} : (tensor<2x5xf32>, tensor<2x3xi32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%l: tensor<2x3x5xf32>, %t: tensor<2x4xi32>) {
  // expected-error @+2 {{'loom.cross_entropy' logits 2x3x5 do not match targets 2x4}}
  // expected-error @+1 {{'loom.cross_entropy' op failed to infer returned types}}
  %0 = loom.cross_entropy %l, %t {label_smoothing = 0.0 : f64, ignore_index = 0 : i64} : (tensor<2x3x5xf32>, tensor<2x4xi32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f(%l: tensor<2x5xf32>, %t: tensor<2xi32>) {
  // expected-error @+2 {{'loom.cross_entropy' label_smoothing must be in [0, 1], got 1.5}}
  // expected-error @+1 {{'loom.cross_entropy' op failed to infer returned types}}
  %0 = loom.cross_entropy %l, %t {label_smoothing = 1.5 : f64, ignore_index = 0 : i64} : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%l: tensor<2x5xf32>, %t: tensor<2xi32>, %g: tensor<3xf32>) {
  // expected-error @+2 {{'loom.cross_entropy_grad' grad must have the targets' shape}}
  // expected-error @+1 {{'loom.cross_entropy_grad' op failed to infer returned types}}
  %0 = loom.cross_entropy_grad %l, %t, %g {label_smoothing = 0.0 : f64, ignore_index = 0 : i64} : (tensor<2x5xf32>, tensor<2xi32>, tensor<3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.reshape' cannot reshape 6x4 (24 elements) into 5x5 (25 elements)}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [5, 5] : (tensor<6x4xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.reshape' cannot reshape 6x4 into ?x5}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [-1, 5] : (tensor<6x4xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // A target whose element count overflows int64 (found by fuzzing the ONNX
  // importer) is refused, not multiplied out.
  // expected-error @+2 {{'loom.reshape' of 6x4 into 4294967296x4294967296x4 counts more elements than an int64 holds}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [4294967296, 4294967296, 4] : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.reshape' infers more than one dim}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [-1, -1] : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.reshape' copies dim 2 of a rank-2 input}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [6, 4, 0] : (tensor<6x4xf32>) -> tensor<6x4x1xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.reshape' has invalid size -3}}
  // expected-error @+1 {{'loom.reshape' op failed to infer returned types}}
  %0 = loom.reshape %x [-3, 8] : (tensor<6x4xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>, %y: tensor<5xf32>) {
  // expected-error @+2 {{'loom.reshape_as' cannot reshape 6x4 into 5}}
  // expected-error @+1 {{'loom.reshape_as' op failed to infer returned types}}
  %0 = loom.reshape_as %x, %y : (tensor<6x4xf32>, tensor<5xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.expand_dims' has invalid or repeated dim 3 for a rank-3 result}}
  // expected-error @+1 {{'loom.expand_dims' op failed to infer returned types}}
  %0 = loom.expand_dims %x [3] : (tensor<6x4xf32>) -> tensor<6x4x1xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.transpose' permutation has 3 entries for a rank-2 tensor}}
  // expected-error @+1 {{'loom.transpose' op failed to infer returned types}}
  %0 = loom.transpose %x [0, 1, 2] : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.transpose' perm is not a permutation of 0..1}}
  // expected-error @+1 {{'loom.transpose' op failed to infer returned types}}
  %0 = loom.transpose %x [1, 1] : (tensor<6x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.slice' dim 2 is out of range for a rank-2 tensor}}
  // expected-error @+1 {{'loom.slice' op failed to infer returned types}}
  %0 = loom.slice %x {dim = 2 : i64, start = 0 : i64, end = 1 : i64} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.slice' range [2, 7) is outside a dim of size 6}}
  // expected-error @+1 {{'loom.slice' op failed to infer returned types}}
  %0 = loom.slice %x {dim = 0 : i64, start = 2 : i64, end = 7 : i64} : (tensor<6x4xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x4xf32>) {
  // expected-error @+2 {{'loom.slice' has start 3 after end 1}}
  // expected-error @+1 {{'loom.slice' op failed to infer returned types}}
  %0 = loom.slice %x {dim = 0 : i64, start = 3 : i64, end = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%g: tensor<2x4xf32>, %x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.slice_grad' input has 2 entries along dim 0 but the slice has 3}}
  // expected-error @+1 {{'loom.slice_grad' op failed to infer returned types}}
  %0 = loom.slice_grad %g, %x {dim = 0 : i64, start = 1 : i64, end = 4 : i64} : (tensor<2x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%g: tensor<2xf32>, %x: tensor<6x4xf32>) {
  // expected-error @+2 {{'loom.slice_grad' needs input and like of one rank and dim in range}}
  // expected-error @+1 {{'loom.slice_grad' op failed to infer returned types}}
  %0 = loom.slice_grad %g, %x {dim = 0 : i64, start = 1 : i64, end = 3 : i64} : (tensor<2xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'loom.concat' inputs differ in dim 0: 2 and 4}}
  // expected-error @+1 {{'loom.concat' op failed to infer returned types}}
  %0 = loom.concat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xf64>) {
  // expected-error @+2 {{'loom.concat' inputs differ in rank or element type: 'tensor<2x3xf32>' and 'tensor<2x3xf64>'}}
  // expected-error @+1 {{'loom.concat' op failed to infer returned types}}
  %0 = loom.concat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf64>) -> tensor<2x6xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'loom.concat' dim 2 is out of range for rank 2}}
  // expected-error @+1 {{'loom.concat' op failed to infer returned types}}
  %0 = loom.concat %a {dim = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+2 {{'loom.concat' needs at least one input}}
  // expected-error @+1 {{'loom.concat' op failed to infer returned types}}
  %0 = loom.concat {dim = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @f(%a: tensor<3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{'loom.broadcast_as' cannot broadcast 3 to 2x4}}
  // expected-error @+1 {{'loom.broadcast_as' op failed to infer returned types}}
  %0 = loom.broadcast_as %a, %b : (tensor<3xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'loom.sum_to' cannot sum 2x4 down to 3}}
  // expected-error @+1 {{'loom.sum_to' op failed to infer returned types}}
  %0 = loom.sum_to %a, %b : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @f(%t: tensor<f32>, %ids: tensor<3xi32>) {
  // expected-error @+2 {{'loom.gather' table must have rank >= 1}}
  // expected-error @+1 {{'loom.gather' op failed to infer returned types}}
  %0 = loom.gather %t, %ids : (tensor<f32>, tensor<3xi32>) -> tensor<3xf32>
  return
}

// -----

func.func @f(%u: tensor<3x5xf32>, %ids: tensor<3xi32>, %t: tensor<10x4xf32>) {
  // expected-error @+2 {{'loom.scatter_add' updates 3x5 do not match ids 3 and rows of 10x4}}
  // expected-error @+1 {{'loom.scatter_add' op failed to infer returned types}}
  %0 = loom.scatter_add %u, %ids, %t : (tensor<3x5xf32>, tensor<3xi32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return
}

// -----

func.func @f(%u: tensor<3xf32>, %ids: tensor<3xi32>, %t: tensor<f32>) {
  // expected-error @+2 {{'loom.scatter_add' like must have rank >= 1}}
  // expected-error @+1 {{'loom.scatter_add' op failed to infer returned types}}
  %0 = loom.scatter_add %u, %ids, %t : (tensor<3xf32>, tensor<3xi32>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>) {
  // expected-error @+1 {{'loom.iota' op dim 2 is out of range for a rank-2 tensor}}
  %0 = loom.iota %ids {dim = 2 : i64} : tensor<?x?xi32> -> tensor<?xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x7xi32>) {
  // expected-error @+1 {{'loom.iota' op result must be [7], got ?}}
  %0 = loom.iota %ids {dim = 1 : i64} : tensor<?x7xi32> -> tensor<?xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x7xi32>) {
  // expected-error @+1 {{'loom.iota' op result element type cannot be i1}}
  %0 = loom.iota %ids {dim = 1 : i64} : tensor<?x7xi32> -> tensor<7xi1>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>) {
  // expected-error @+1 {{'loom.causal_mask' op dim 5 is out of range for a rank-2 tensor}}
  %0 = loom.causal_mask %ids {dim = 5 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x4xi32>) {
  // expected-error @+1 {{'loom.causal_mask' op result must be [4x4], got 4x5}}
  %0 = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x4xi32> -> tensor<4x5xf32>
  return
}

// -----

func.func @f(%ids: tensor<?xi32>) {
  // expected-error @+1 {{'loom.padding_mask' op ids must be [batch, length], got ?}}
  %0 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?xi32> -> tensor<?x1x1x?xf32>
  return
}

// -----

func.func @f(%ids: tensor<?x?xi32>) {
  // expected-error @+1 {{'loom.padding_mask' op result must be [?x1x1x?], got ?x?}}
  %0 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  return
}

// -----

func.func @f(%ids: tensor<3xi32>) {
  // expected-error @+1 {{'loom.one_hot' op depth must be positive, got 0}}
  %0 = loom.one_hot %ids {depth = 0 : i64} : tensor<3xi32> -> tensor<3x0xf32>
  return
}

// -----

func.func @f(%ids: tensor<3xi32>) {
  // expected-error @+1 {{'loom.one_hot' op result must be [3x5], got 3x4}}
  %0 = loom.one_hot %ids {depth = 5 : i64} : tensor<3xi32> -> tensor<3x4xf32>
  return
}

// -----

func.func @f(%ids: tensor<3xi32>) {
  // expected-error @+1 {{'loom.one_hot' op result must be a float tensor}}
  %0 = loom.one_hot %ids {depth = 5 : i64} : tensor<3xi32> -> tensor<3x5xi32>
  return
}

// -----

func.func @f(%a: tensor<3xi32>) {
  // expected-error @+1 {{'loom.exp' op operand #0 must be tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<3xi32>'}}
  %0 = loom.exp %a : (tensor<3xi32>) -> tensor<3xi32>
  return
}

// -----

// Keys held position first must fit q's leading dims once moved.
func.func @f(%q: tensor<3x2x1x8xf32>, %k: tensor<5x2x3x8xf32>) {
  // expected-error @+1 {{'loom.attention' op needs equal leading dims of q, k and v}}
  %o, %l = loom.attention %q, %k, %k {keys_position_major, scale = 0.5 : f64} : tensor<3x2x1x8xf32>, tensor<5x2x3x8xf32>, tensor<5x2x3x8xf32> -> tensor<3x2x1x8xf32>, tensor<3x2x1xf32>
  return
}

// -----

func.func @f(%q: tensor<3x2x1x8xf32>, %k: tensor<5x3x2x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'loom.attention' op keys_position_major is for inference: no dropout}}
  %o, %l = loom.attention %q, %k, %k seed(%seed : tensor<i64>) {keys_position_major, scale = 0.5 : f64, dropout_rate = 0.1 : f64} : tensor<3x2x1x8xf32>, tensor<5x3x2x8xf32>, tensor<5x3x2x8xf32> -> tensor<3x2x1x8xf32>, tensor<3x2x1xf32>
  return
}

// -----

// Narrow keys and values are read with f32 queries only, and both alike.
func.func @f(%q: tensor<2x1x8xbf16>, %k: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'loom.attention' op needs q, k and v of one element type (or k and v of bf16 or f16 with an f32 q), got 'bf16', 'f32' and 'f32'}}
  %o, %l = loom.attention %q, %k, %k {scale = 0.5 : f64} : tensor<2x1x8xbf16>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x1x8xbf16>, tensor<2x1xbf16>
  return
}

// -----

func.func @f(%q: tensor<2x1x8xf32>, %k: tensor<2x5x8xbf16>, %v: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'loom.attention' op needs q, k and v of one element type (or k and v of bf16 or f16 with an f32 q), got 'f32', 'bf16' and 'f32'}}
  %o, %l = loom.attention %q, %k, %v {scale = 0.5 : f64} : tensor<2x1x8xf32>, tensor<2x5x8xbf16>, tensor<2x5x8xf32> -> tensor<2x1x8xf32>, tensor<2x1xf32>
  return
}

// -----

// The backward takes one element type throughout.
func.func @f(%q: tensor<2x1x8xf32>, %k: tensor<2x5x8xbf16>, %o: tensor<2x1x8xf32>, %l: tensor<2x1xf32>) {
  // expected-error @+1 {{'loom.attention_grad' op needs q, k and v of one element type, got 'f32', 'bf16' and 'bf16'}}
  %dq, %dk, %dv = loom.attention_grad %q, %k, %k, %o, %l, %o {scale = 0.5 : f64} : tensor<2x1x8xf32>, tensor<2x5x8xbf16>, tensor<2x5x8xbf16>, tensor<2x1x8xf32>, tensor<2x1xf32>, tensor<2x1x8xf32> -> tensor<2x1x8xf32>, tensor<2x5x8xbf16>, tensor<2x5x8xbf16>
  return
}

// -----

// A NaN epsilon would make every normalized value NaN.
func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'loom.layer_norm' epsilon must be a finite number, 0 or more, got nan}}
  // expected-error @+1 {{'loom.layer_norm' op failed to infer returned types}}
  %0 = loom.layer_norm %x, %g, %b {epsilon = 0x7FF8000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>) {
  // expected-error @+1 {{'loom.attention' op scale must be a finite number, got nan}}
  %o, %l = loom.attention %q, %k, %k {scale = 0x7FF8000000000000 : f64} : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x3x8xf32>, tensor<2x3xf32>
  return
}

// -----

func.func @f(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %seed: tensor<i64>) {
  // expected-error @+1 {{'loom.attention' op dropout_rate must be in [0, 1), got nan}}
  %o, %l = loom.attention %q, %k, %k seed(%seed : tensor<i64>) {scale = 0.5 : f64, dropout_rate = 0x7FF8000000000000 : f64} : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x3x8xf32>, tensor<2x3xf32>
  return
}

// -----

// bf16 factors may be summed in f32, never the other way round.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'loom.matmul' op inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xbf16>'}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xbf16>
  return
}

// -----

func.func @f(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>) {
  // expected-error @+2 {{'loom.matmul' op inferred type(s) 'tensor<2x4xbf16>' are incompatible with return type(s) of operation 'tensor<2x4xf64>'}}
  // expected-error @+1 {{'loom.matmul' op failed to infer returned types}}
  %0 = loom.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf64>
  return
}

// -----

func.func @f(%x: tensor<5x8xf32>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{'loom.linear' op needs input and weight of one element type and a result of theirs (or f32 for bf16 or f16), got 'f32', 'bf16' and 'f32'}}
  %0 = loom.linear %x, %w : tensor<5x8xf32>, tensor<4x8xbf16> -> tensor<5x4xf32>
  return
}

// -----

func.func @f(%x: tensor<5x8xbf16>, %w: tensor<4x8xbf16>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'loom.linear' op bias must be [4], got 'tensor<4xbf16>'}}
  %0 = loom.linear %x, %w bias(%b : tensor<4xbf16>) : tensor<5x8xbf16>, tensor<4x8xbf16> -> tensor<5x4xf32>
  return
}
