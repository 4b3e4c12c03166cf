// loom-fuse-layer-norm turns LayerNorm written with reductions into
// loom.layer_norm, then layer_norm(a + b) into loom.add_layer_norm; with
// remarks=true every candidate it leaves alone says why.
// RUN: loom-opt %s --loom-fuse-layer-norm | FileCheck %s
// RUN: loom-opt %s --loom-fuse-layer-norm=remarks=true --verify-diagnostics -o /dev/null

// LayerNorm as PyTorch's ONNX export writes it (opset < 17): pow, sqrt, div.
// The f32 epsilon constant is taken as it is.
// CHECK-LABEL: func.func @onnx_export(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x8xf32>, %[[G:[a-z0-9]+]]: tensor<8xf32>, %[[B:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[Y:.*]] = loom.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.99999974{{[0-9]*}}E-6 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT:    return %[[Y]]
func.func @onnx_export(%x: tensor<?x?x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %mean = loom.reduce_mean %x [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %d = loom.sub %x, %mean : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %two = loom.constant dense<2.0> : tensor<f32>
  %sq = loom.pow %d, %two : (tensor<?x?x8xf32>, tensor<f32>) -> tensor<?x?x8xf32>
  %var = loom.reduce_mean %sq [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
  %eps = loom.constant dense<1.0e-5> : tensor<f32>
  %ve = loom.add %var, %eps : (tensor<?x?x1xf32>, tensor<f32>) -> tensor<?x?x1xf32>
  %std = loom.sqrt %ve : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %n = loom.div %d, %std : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
  %s = loom.mul %n, %gamma : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = loom.add %s, %beta : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// d * d, rsqrt, and gamma and beta as left operands; then 1 / sqrt. The
// second norm reads the first's output, not a sum, so it stays a layer norm.
// CHECK-LABEL: func.func @variants(
// CHECK-NEXT:    %[[A:.*]] = loom.layer_norm %arg0, %arg1, %arg2 {epsilon = 1.000000e-03 : f64}
// CHECK-NEXT:    %[[C:.*]] = loom.layer_norm %[[A]], %arg1, %arg2 {epsilon = 1.000000e-03 : f64}
// CHECK-NEXT:    return %[[C]]
func.func @variants(%x: tensor<4x8xf64>, %gamma: tensor<8xf64>, %beta: tensor<8xf64>) -> tensor<4x8xf64> {
  %eps = loom.constant dense<1.0e-3> : tensor<f64>
  %mean = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d = loom.sub %x, %mean : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq = loom.mul %d, %d : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var = loom.reduce_mean %sq [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %ve = loom.add %eps, %var : (tensor<f64>, tensor<4x1xf64>) -> tensor<4x1xf64>
  %r = loom.rsqrt %ve : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %n = loom.mul %r, %d : (tensor<4x1xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %s = loom.mul %gamma, %n : (tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %y = loom.add %beta, %s : (tensor<8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>

  %mean2 = loom.reduce_mean %y [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d2 = loom.sub %y, %mean2 : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq2 = loom.mul %d2, %d2 : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var2 = loom.reduce_mean %sq2 [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %ve2 = loom.add %var2, %eps : (tensor<4x1xf64>, tensor<f64>) -> tensor<4x1xf64>
  %std2 = loom.sqrt %ve2 : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %one = loom.constant dense<1.0> : tensor<f64>
  %r2 = loom.div %one, %std2 : (tensor<f64>, tensor<4x1xf64>) -> tensor<4x1xf64>
  %n2 = loom.mul %d2, %r2 : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %s2 = loom.mul %n2, %gamma : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %y2 = loom.add %s2, %beta : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  return %y2 : tensor<4x8xf64>
}

// Post-norm, as the frontend writes a sublayer: norm(x + f(x)).
// CHECK-LABEL: func.func @post_norm(
// CHECK-NEXT:    %[[S:.*]], %[[Y:.*]] = loom.add_layer_norm %arg0, %arg1, %arg2, %arg3 {epsilon = 1.000000e-05 : f64} : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK-NEXT:    return %[[Y]]
func.func @post_norm(%x: tensor<?x?x32xf32>, %f: tensor<?x?x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %s = loom.add %x, %f : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %y = loom.layer_norm %s, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %y : tensor<?x?x32xf32>
}

// Pre-norm: the sum is also the next residual; the fused op's sum replaces
// the add there.
// CHECK-LABEL: func.func @pre_norm(
// CHECK-NEXT:    %[[S:.*]], %[[Y:.*]] = loom.add_layer_norm %arg0, %arg1, %arg2, %arg3
// CHECK-NEXT:    %[[M:.*]] = loom.mul %[[Y]], %[[Y]]
// CHECK-NEXT:    %[[R:.*]] = loom.add %[[S]], %[[M]]
// CHECK-NEXT:    return %[[R]]
func.func @pre_norm(%x: tensor<6x32xf32>, %f: tensor<6x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<6x32xf32> {
  %s = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %y = loom.layer_norm %s, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  %m = loom.mul %y, %y : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %r = loom.add %s, %m : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  return %r : tensor<6x32xf32>
}

// gamma computed after the add: the fused op goes where the norm was, which
// is right only while no other user of the sum comes before the norm.
// CHECK-LABEL: func.func @late_gamma(
// CHECK-NEXT:    %[[G:.*]] = loom.mul %arg2, %arg2
// CHECK-NEXT:    %[[S:.*]], %[[Y:.*]] = loom.add_layer_norm %arg0, %arg1, %[[G]], %arg3
// CHECK-NEXT:    %[[R:.*]] = loom.add %[[S]], %[[Y]]
// CHECK-NEXT:    %[[T:.*]] = loom.add %arg0, %arg1
// CHECK-NEXT:    %[[U:.*]] = loom.mul %[[T]], %[[T]]
// CHECK-NEXT:    %[[G2:.*]] = loom.mul %arg2, %arg2
// CHECK-NEXT:    loom.layer_norm %[[T]], %[[G2]], %arg3
func.func @late_gamma(%x: tensor<6x32xf32>, %f: tensor<6x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>)
    -> (tensor<6x32xf32>, tensor<6x32xf32>, tensor<6x32xf32>) {
  %s = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %g2 = loom.mul %g, %g : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %y = loom.layer_norm %s, %g2, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  %r = loom.add %s, %y : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>

  %t = loom.add %x, %f : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %u = loom.mul %t, %t : (tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %g3 = loom.mul %g, %g : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  // expected-remark @below {{not fused: gamma or beta is computed after the add, and the sum is used before the layer norm}}
  %z = loom.layer_norm %t, %g3, %b {epsilon = 1.0e-5 : f64} : (tensor<6x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x32xf32>
  return %r, %u, %z : tensor<6x32xf32>, tensor<6x32xf32>, tensor<6x32xf32>
}

// A written-out norm of a sum takes both rewrites.
// CHECK-LABEL: func.func @written_sum(
// CHECK-NEXT:    %{{.*}}, %[[Y:.*]] = loom.add_layer_norm %arg0, %arg1, %arg2, %arg3 {epsilon = 1.000000e-03 : f64}
// CHECK-NEXT:    return %[[Y]]
func.func @written_sum(%a: tensor<4x8xf64>, %c: tensor<4x8xf64>, %gamma: tensor<8xf64>, %beta: tensor<8xf64>) -> tensor<4x8xf64> {
  %x = loom.add %a, %c : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %mean = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %d = loom.sub %x, %mean : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %sq = loom.mul %d, %d : (tensor<4x8xf64>, tensor<4x8xf64>) -> tensor<4x8xf64>
  %var = loom.reduce_mean %sq [1] keep_dims : (tensor<4x8xf64>) -> tensor<4x1xf64>
  %eps = loom.constant dense<1.0e-3> : tensor<f64>
  %ve = loom.add %var, %eps : (tensor<4x1xf64>, tensor<f64>) -> tensor<4x1xf64>
  %r = loom.rsqrt %ve : (tensor<4x1xf64>) -> tensor<4x1xf64>
  %n = loom.mul %d, %r : (tensor<4x8xf64>, tensor<4x1xf64>) -> tensor<4x8xf64>
  %s = loom.mul %n, %gamma : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  %y = loom.add %s, %beta : (tensor<4x8xf64>, tensor<8xf64>) -> tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}

// Declined: a mean over another dim, a variance read elsewhere, a norm
// without gamma, and an add that broadcasts.
// CHECK-LABEL: func.func @declined(
// CHECK-NOT:     loom.add_layer_norm
// CHECK:         return
func.func @declined(%x: tensor<4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>, %row: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-remark @below {{not fused: the mean is not over the last dim with keep_dims}}
  %m0 = loom.reduce_mean %x [0] keep_dims : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %d0 = loom.sub %x, %m0 : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>

  %eps = loom.constant dense<1.0e-5> : tensor<f32>
  // expected-remark @below {{not fused: the square is not averaged over the last dim with keep_dims (or has other uses)}}
  %m1 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d1 = loom.sub %x, %m1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq1 = loom.mul %d1, %d1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq1b = loom.mul %sq1, %sq1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v1 = loom.reduce_mean %sq1b [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve1 = loom.add %v1, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r1 = loom.rsqrt %ve1 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n1 = loom.mul %d1, %r1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>

  // expected-remark @below {{not fused: the variance is not followed by + epsilon (a splat constant), or has other uses}}
  %m2 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d2 = loom.sub %x, %m2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq2 = loom.mul %d2, %d2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v2 = loom.reduce_mean %sq2 [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve2 = loom.add %v2, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r2 = loom.rsqrt %ve2 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n2 = loom.mul %d2, %r2 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %s2 = loom.mul %n2, %gamma : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y2 = loom.add %s2, %beta : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>

  // expected-remark @below {{not fused: the normalized value is not scaled by a [D] gamma alone}}
  %m3 = loom.reduce_mean %x [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d3 = loom.sub %x, %m3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq3 = loom.mul %d3, %d3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v3 = loom.reduce_mean %sq3 [1] keep_dims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve3 = loom.add %v3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r3 = loom.rsqrt %ve3 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n3 = loom.mul %d3, %r3 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>

  %b4 = loom.add %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{not fused: the add broadcasts its operands; loom.add_layer_norm adds two tensors of one type}}
  %y4 = loom.layer_norm %b4, %gamma, %beta {epsilon = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %d0, %n1, %v2, %n3, %y4 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
