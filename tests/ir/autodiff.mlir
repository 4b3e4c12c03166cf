// loom-autodiff appends @<name>_grad after each loss marked loom.differentiable:
// the forward cloned, then the adjoint, returning the loss and the gradient of
// every float argument.
// RUN: loom-opt %s --loom-autodiff | FileCheck %s

// %p is used twice, so its gradient is the sum of two contributions; the
// broadcast %w gets its gradient summed back to [3]; the integer %ids gets none
// and the table's gradient is the scatter-add adjoint of gather.

// The original function is kept as it was.
// CHECK-LABEL: func.func @loss(
// CHECK-SAME:    %arg0: tensor<3xf32> {loom.param = "scale"}, %arg1: tensor<2xi32>, %arg2: tensor<4x3xf32>) -> tensor<f32> attributes {loom.differentiable}
// CHECK:         return

// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME:    %[[W:.*]]: tensor<3xf32> {loom.param = "scale"}, %[[IDS:.*]]: tensor<2xi32>, %[[T:.*]]: tensor<4x3xf32>)
// CHECK-SAME:    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.scale"}, tensor<4x3xf32> {loom.output = "grad.2"})
// CHECK-NOT:   loom.differentiable
// CHECK:         %[[E:.*]] = loom.gather %[[T]], %[[IDS]]
// CHECK:         %[[P:.*]] = loom.mul %[[E]], %[[W]]
// CHECK:         %[[Q:.*]] = loom.mul %[[P]], %[[P]]
// CHECK:         %[[L:.*]] = loom.reduce_sum %[[Q]] [0, 1]
// CHECK:         %[[ONE:.*]] = loom.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[GQ:.*]] = loom.broadcast_as %[[ONE]], %[[Q]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[A:.*]] = loom.mul %[[GQ]], %[[P]]
// CHECK:         %[[B:.*]] = loom.mul %[[GQ]], %[[P]]
// CHECK:         %[[GP:.*]] = loom.add %[[A]], %[[B]]
// CHECK:         %[[GE:.*]] = loom.mul %[[GP]], %[[W]]
// CHECK:         %[[GWB:.*]] = loom.mul %[[GP]], %[[E]]
// CHECK:         %[[GW:.*]] = loom.sum_to %[[GWB]], %[[W]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK:         %[[GT:.*]] = loom.scatter_add %[[GE]], %[[IDS]], %[[T]]
// CHECK:         return %[[L]], %[[GW]], %[[GT]] : tensor<f32>, tensor<3xf32>, tensor<4x3xf32>
func.func @loss(%w: tensor<3xf32> {loom.param = "scale"}, %ids: tensor<2xi32>,
                %table: tensor<4x3xf32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %e = loom.gather %table, %ids : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  %p = loom.mul %e, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %q = loom.mul %p, %p : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_sum %q [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// A float argument the loss does not depend on gets zeros shaped like it
// (dynamic dims included); one that only reaches the loss through an integer
// cast is piecewise constant and gets zeros too. Gradients built for constant
// operands are not kept.
// CHECK-LABEL: func.func @partial_grad(
// CHECK-SAME:    %[[X:.*]]: tensor<?x2xf32>, %[[U:.*]]: tensor<?xf32>, %[[C:.*]]: tensor<2xf32>)
// CHECK-SAME:    -> (tensor<f32> {loom.output = "loss"}, tensor<?x2xf32> {loom.output = "grad.0"}, tensor<?xf32> {loom.output = "grad.1"}, tensor<2xf32> {loom.output = "grad.2"})
// CHECK:         %[[K:.*]] = loom.constant dense<{{.*}}> : tensor<2xf32>
// CHECK:         %[[Y:.*]] = loom.mul %[[X]], %[[K]]
// CHECK:         %[[L:.*]] = loom.add
// CHECK:         %[[GY:.*]] = loom.broadcast_as %{{.*}}, %[[Y]]
// CHECK-NEXT:    %[[GX:.*]] = loom.mul %[[GY]], %[[K]] : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    %[[Z0:.*]] = loom.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[GU:.*]] = loom.broadcast_as %[[Z0]], %[[U]] : (tensor<f32>, tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[Z1:.*]] = loom.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[GC:.*]] = loom.broadcast_as %[[Z1]], %[[C]] : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    return %[[L]], %[[GX]], %[[GU]], %[[GC]]
func.func @partial(%x: tensor<?x2xf32>, %unused: tensor<?xf32>, %c: tensor<2xf32>) -> tensor<f32>
    attributes {loom.differentiable} {
  %k = loom.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %y = loom.mul %x, %k : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %s = loom.reduce_sum %y [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %i = loom.cast %c : tensor<2xf32> to tensor<2xi32>
  %f = loom.cast %i : tensor<2xi32> to tensor<2xf32>
  %t = loom.reduce_sum %f [0] : (tensor<2xf32>) -> tensor<f32>
  %l = loom.add %s, %t : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// Dynamic dims and bf16 stay well typed. The causal mask depends only on the
// shape of %x, so the gradient stops there without a rule; dropout's backward
// is the same dropout (same seed and offset) applied to the gradient.
// CHECK-LABEL: func.func @attention_grad(
// CHECK-SAME:    %[[X:.*]]: tensor<?x?x8xbf16>, %[[SEED:.*]]: tensor<i64>)
// CHECK-SAME:    -> (tensor<bf16> {loom.output = "loss"}, tensor<?x?x8xbf16> {loom.output = "grad.0"})
// CHECK:         loom.causal_mask %[[X]]
// CHECK:         %[[P:.*]] = loom.softmax
// CHECK:         loom.dropout %[[P]], %[[SEED]] {offset = 3 : i64, rate = 1.000000e-01 : f64}
// CHECK-NOT:     loom.causal_mask
// CHECK:         %[[GD:.*]] = loom.matmul %{{.*}}, %[[X]] {transpose_rhs} : (tensor<?x?x8xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x?xbf16>
// CHECK-NEXT:    %{{.*}} = loom.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<?x?x?xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x8xbf16>
// CHECK-NEXT:    %[[GP:.*]] = loom.dropout %[[GD]], %[[SEED]] {offset = 3 : i64, rate = 1.000000e-01 : f64}
// CHECK:         return
func.func @attention(%x: tensor<?x?x8xbf16>, %seed: tensor<i64>) -> tensor<bf16>
    attributes {loom.differentiable} {
  %s = loom.matmul %x, %x {transpose_rhs} : (tensor<?x?x8xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x?xbf16>
  %m = loom.causal_mask %x {dim = 1 : i64} : tensor<?x?x8xbf16> -> tensor<?x?xbf16>
  %sm = loom.add %s, %m : (tensor<?x?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?x?xbf16>
  %p = loom.softmax %sm {axis = 2 : i64} : (tensor<?x?x?xbf16>) -> tensor<?x?x?xbf16>
  %pd = loom.dropout %p, %seed {rate = 1.0e-01 : f64, offset = 3 : i64} : (tensor<?x?x?xbf16>, tensor<i64>) -> tensor<?x?x?xbf16>
  %o = loom.matmul %pd, %x : (tensor<?x?x?xbf16>, tensor<?x?x8xbf16>) -> tensor<?x?x8xbf16>
  %l = loom.reduce_mean %o [0, 1, 2] : (tensor<?x?x8xbf16>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// A float input that is data (`loom.input`, an imported model's attention
// mask) takes no gradient: only the parameter's comes back, and nothing is
// built for the mask.
// CHECK-LABEL: func.func @masked_grad(
// CHECK-SAME:    -> (tensor<f32> {loom.output = "loss"}, tensor<2x3xf32> {loom.output = "grad.w"})
// CHECK-NOT:     grad.1
// CHECK:         return
func.func @masked(%w: tensor<2x3xf32> {loom.param = "w"},
                  %mask: tensor<2x3xf32> {loom.input = "mask"}) -> tensor<f32>
    attributes {loom.differentiable} {
  %y = loom.mul %w, %mask : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_sum %y [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
