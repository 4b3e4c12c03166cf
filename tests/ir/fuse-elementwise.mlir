// loom-fuse-elementwise groups elementwise ops, broadcasts, small constants and
// row reductions into loom.fusion regions, one future kernel each. The module
// also gets a two-parameter @train_step from loom-optimizer, whose Adam update
// the pass turns into a single region.
// RUN: loom-opt %s --loom-optimizer="d-model=4 warmup=10" --loom-fuse-elementwise | FileCheck %s
// RUN: loom-opt %s --loom-optimizer="d-model=4 warmup=10" --loom-fuse-elementwise="remarks=true" \
// RUN:   --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: loom-opt %s --loom-optimizer --loom-fuse-elementwise | loom-opt --loom-fuse-elementwise > /dev/null

// Producer-consumer: the whole chain is one region. The scalar constant and
// the broadcast are cloned in, so the region reads %b [8], not its broadcast.
// CHECK-LABEL: func.func @producer_consumer(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4x8xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[R:.*]] = loom.fusion(%[[X]], %[[B]]) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[XA:[^:]+]]: tensor<4x8xf32>, %[[BA:[^:]+]]: tensor<8xf32>):
// CHECK-NEXT:      %[[C:.*]] = loom.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:      %[[A:.*]] = loom.mul %[[XA]], %[[C]]
// CHECK-NEXT:      %[[BB:.*]] = loom.broadcast_as %[[BA]], %[[XA]]
// CHECK-NEXT:      %[[S:.*]] = loom.add %[[A]], %[[BB]]
// CHECK-NEXT:      %[[E:.*]] = loom.exp %[[S]]
// CHECK-NEXT:      %[[SUM:.*]] = loom.reduce_sum %[[E]] [1]
// CHECK-NEXT:      loom.yield %[[SUM]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @producer_consumer(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %c = loom.constant dense<2.0> : tensor<f32>
  %bb = loom.broadcast_as %b, %x : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = loom.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = loom.add %a, %bb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = loom.exp %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = loom.reduce_sum %e [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A row reduction, the view that restores its dim, and its consumer.
// CHECK-LABEL: func.func @row_center(
// CHECK-NEXT:    loom.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loom.reduce_mean
// CHECK-NEXT:      loom.expand_dims
// CHECK-NEXT:      loom.sub
// CHECK-NEXT:      loom.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @row_center(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %m = loom.reduce_mean %x [1] : (tensor<?x8xf32>) -> tensor<?xf32>
  %e = loom.expand_dims %m [1] : (tensor<?xf32>) -> tensor<?x1xf32>
  %d = loom.sub %x, %e : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  return %d : tensor<?x8xf32>
}

// Siblings: exp and tanh read %x and have its shape, so they share one
// two-output region; the row maximum, of another shape, gets its own.
// CHECK-LABEL: func.func @siblings(
// CHECK-SAME:    %[[X:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<8x8xf32>)
// CHECK-NEXT:    %[[F:.*]]:2 = loom.fusion(%[[X]]) : (tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
// CHECK:           loom.exp
// CHECK-NEXT:      loom.tanh
// CHECK-NEXT:      loom.yield
// CHECK:         %[[M1:.*]] = loom.matmul %[[F]]#0, %[[W]]
// CHECK-NEXT:    %[[M2:.*]] = loom.matmul %[[F]]#1, %[[W]]
// CHECK-NEXT:    %[[MAX:.*]] = loom.fusion(%[[X]]) : (tensor<?x8xf32>) -> tensor<?xf32> {
// CHECK:           loom.reduce_max
// CHECK:         return %[[M1]], %[[M2]], %[[MAX]]
func.func @siblings(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>) {
  %e = loom.exp %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m1 = loom.matmul %e, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %t = loom.tanh %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m2 = loom.matmul %t, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %r = loom.reduce_max %x [1] : (tensor<?x8xf32>) -> tensor<?xf32>
  return %m1, %m2, %r : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?xf32>
}

// Multi-output: %e is read by a matmul and an add that does not depend on
// the matmul, so it joins the add's region and is yielded for the matmul.
// CHECK-LABEL: func.func @multi_output(
// CHECK-NEXT:    %[[F:.*]]:2 = loom.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[E:.*]] = loom.exp
// CHECK-NEXT:      %[[S:.*]] = loom.add %[[E]]
// CHECK-NEXT:      loom.yield %[[E]], %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M:.*]] = loom.matmul %[[F]]#0
// CHECK-NEXT:    return %[[M]], %[[F]]#1
func.func @multi_output(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = loom.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = loom.add %e, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// A value's bf16 copy (loom-mixed-precision's cast) iterates over the same
// elements: it joins the region that makes the value, which yields both, the
// f32 value for the add and the bf16 copy for the product.
// CHECK-LABEL: func.func @narrow_copy(
// CHECK-NEXT:    %[[F:.*]]:2 = loom.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[E:.*]] = loom.exp
// CHECK-NEXT:      %[[C:.*]] = loom.cast %[[E]] : tensor<?x8xf32> to tensor<?x8xbf16>
// CHECK-NEXT:      loom.yield %[[E]], %[[C]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M:.*]] = loom.matmul %[[F]]#1, %{{.*}} : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[S:.*]] = loom.fusion(%[[M]], %[[F]]#0)
func.func @narrow_copy(%x: tensor<?x8xf32>, %w: tensor<8x8xbf16>) -> tensor<?x8xf32> {
  %e = loom.exp %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %e16 = loom.cast %e : tensor<?x8xf32> to tensor<?x8xbf16>
  %m = loom.matmul %e16, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xf32>
  %s = loom.add %m, %e : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// Declined: here the add also reads the matmul of %e, so a region holding
// both exp and add would feed the matmul and read it back. %e stays a region
// of its own, materialized for both readers.
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    %[[E:.*]] = loom.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loom.exp
// CHECK-NEXT:      loom.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M:.*]] = loom.matmul %[[E]]
// CHECK-NEXT:    %[[T:.*]] = loom.fusion(%[[E]], %[[M]])
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loom.add
// CHECK-NEXT:      loom.tanh
// CHECK-NEXT:      loom.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[T]]
// REMARK: fuse-elementwise.mlir:[[@LINE+4]]:8: remark: not fused with its operand from 'loom.exp' at loc({{.*}}:[[@LINE+2]]:8): 'loom.matmul' at loc({{.*}}:[[@LINE+3]]:8) depends on the producer's region and feeds the consumer's, so one region would be a cycle
func.func @cycle(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = loom.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = loom.add %e, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = loom.tanh %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %t : tensor<4x8xf32>
}

// A reduction over a leading dim is no row reduction: it stays outside.
// CHECK-LABEL: func.func @column_sum(
// CHECK-NEXT:    %[[E:.*]] = loom.fusion
// CHECK:         %[[R:.*]] = loom.reduce_sum %[[E]] [0]
// CHECK-NEXT:    %[[N:.*]] = loom.fusion(%[[R]])
// REMARK: fuse-elementwise.mlir:[[@LINE+3]]:8: remark: stays outside regions: it reduces dims that are not the trailing ones
func.func @column_sum(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %e = loom.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = loom.reduce_sum %e [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %n = loom.neg %r : (tensor<8xf32>) -> tensor<8xf32>
  return %n : tensor<8xf32>
}

// Sums of squares of two shapes (gradient clipping's global norm): a kernel
// that reduces a whole tensor iterates over its shape, so the two
// reductions take a region each, and the sum joins one of them.
// CHECK-LABEL: func.func @norms_of_two_shapes(
// CHECK-NEXT:    %[[SB:.*]] = loom.fusion(%{{.*}}) : (tensor<3xf32>) -> tensor<f32>
// CHECK:           loom.reduce_sum %{{.*}} [0] : (tensor<3xf32>)
// CHECK:         loom.fusion(%{{.*}}, %[[SB]]) : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
// CHECK:           loom.reduce_sum %{{.*}} [0, 1] : (tensor<4x8xf32>)
// CHECK-NEXT:      loom.add
// CHECK-NEXT:      loom.sqrt
// REMARK: fuse-elementwise.mlir:[[@LINE+6]]:8: remark: not fused with its operand from 'loom.reduce_sum' at loc({{.*}}:[[@LINE+5]]:9): the regions reduce a [3] and a [4x8] tensor to scalars, which no one kernel iterates over
func.func @norms_of_two_shapes(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %a2 = loom.mul %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sa = loom.reduce_sum %a2 [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %b2 = loom.mul %b, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %sb = loom.reduce_sum %b2 [0] : (tensor<3xf32>) -> tensor<f32>
  %s = loom.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %n = loom.sqrt %s : (tensor<f32>) -> tensor<f32>
  return %n : tensor<f32>
}

// Of one shape they share a kernel.
// CHECK-LABEL: func.func @norms_of_one_shape(
// CHECK-NEXT:    %[[N:.*]] = loom.fusion(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
// CHECK-COUNT-2:   loom.reduce_sum
// CHECK:         return %[[N]]
func.func @norms_of_one_shape(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<f32> {
  %a2 = loom.mul %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sa = loom.reduce_sum %a2 [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %b2 = loom.mul %b, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sb = loom.reduce_sum %b2 [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %s = loom.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// Two parameters of one shape. loom-optimizer clones this body into
// @train_step and appends the schedule and both Adam updates.
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}, %u: tensor<3xf32> {loom.param = "u"},
                     %x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"},
        tensor<3xf32> {loom.output = "grad.u"}) {
  %0 = loom.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = loom.add %0, %u : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %2 = loom.reduce_sum %1 [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  %3 = loom.sum_to %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %4 = loom.sum_to %0, %u : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %2, %3, %4 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// The forward is one region (the product is yielded for the sum_to that
// reads it). The schedule and the updates of both parameters, which read
// the same schedule scalars, are one region with six results: new moments
// and parameters, in the order the optimizer computed them.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[^:]+]]: tensor<3xf32> {loom.param = "w"}, %[[U:[^:]+]]: tensor<3xf32> {loom.param = "u"},
// CHECK-SAME:    %[[MW:[^:]+]]: tensor<3xf32> {loom.opt_state = "exp_avg.w"}, %[[MU:[^:]+]]: tensor<3xf32> {loom.opt_state = "exp_avg.u"},
// CHECK-SAME:    %[[VW:[^:]+]]: tensor<3xf32> {loom.opt_state = "exp_avg_sq.w"}, %[[VU:[^:]+]]: tensor<3xf32> {loom.opt_state = "exp_avg_sq.u"},
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<i64> {loom.input = "step"}, %[[X:[^:]+]]: tensor<?x3xf32> {loom.input = "x"})
// CHECK-NEXT:    %[[FWD:.*]]:2 = loom.fusion(%[[X]], %[[W]], %[[U]])
// CHECK:           loom.mul
// CHECK-NEXT:      loom.add
// CHECK-NEXT:      loom.reduce_sum
// CHECK-NEXT:      loom.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[GW:.*]] = loom.sum_to %[[X]], %[[W]]
// CHECK-NEXT:    %[[GU:.*]] = loom.sum_to %[[FWD]]#0, %[[U]]
// CHECK-NEXT:    %[[ADAM:.*]]:6 = loom.fusion(%[[STEP]], %[[MW]], %[[GW]], %[[VW]], %[[W]], %[[MU]], %[[GU]], %[[VU]], %[[U]])
// CHECK-NEXT:    ^bb0(%[[STEPA:[^:]+]]: tensor<i64>, %[[MWA:[^:]+]]: tensor<3xf32>, %[[GWA:[^:]+]]: tensor<3xf32>, %[[VWA:[^:]+]]: tensor<3xf32>, %[[WA:[^:]+]]: tensor<3xf32>, %[[MUA:[^:]+]]: tensor<3xf32>, %[[GUA:[^:]+]]: tensor<3xf32>, %[[VUA:[^:]+]]: tensor<3xf32>, %[[UA:[^:]+]]: tensor<3xf32>):
// CHECK-NEXT:      loom.cast %[[STEPA]] : tensor<i64> to tensor<f32>
// CHECK:           %[[STEPSIZE:.*]] = loom.div
// CHECK:           %[[SQRTBC2:.*]] = loom.sqrt {{.*}} : (tensor<f32>) -> tensor<f32>
// CHECK:           %[[M2W:.*]] = loom.add
// CHECK:           %[[V2W:.*]] = loom.add
// CHECK:           %[[UPW:.*]] = loom.mul {{.*}}, %[[STEPSIZE]]
// CHECK-NEXT:      %[[NEWW:.*]] = loom.sub %[[WA]], %[[UPW]]
// CHECK:           %[[M2U:.*]] = loom.add
// CHECK:           %[[V2U:.*]] = loom.add
// CHECK:           loom.div {{.*}}, %[[SQRTBC2]]
// CHECK:           %[[UPU:.*]] = loom.mul {{.*}}, %[[STEPSIZE]]
// CHECK-NEXT:      %[[NEWU:.*]] = loom.sub %[[UA]], %[[UPU]]
// CHECK-NEXT:      loom.yield %[[M2W]], %[[V2W]], %[[NEWW]], %[[M2U]], %[[V2U]], %[[NEWU]]
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[FWD]]#1, %[[ADAM]]#2, %[[ADAM]]#5, %[[ADAM]]#0, %[[ADAM]]#3, %[[ADAM]]#1, %[[ADAM]]#4
