// loom-optimizer builds @train_step from a gradient function: the parameters,
// their Adam moments and the step come in; the loss, the updated parameters
// and moments go out. The gradient body is cloned in, then the schedule and
// the update follow as plain loom ops.
// RUN: loom-opt %s --loom-optimizer="d-model=4 warmup=10" | FileCheck %s
// RUN: loom-opt %s --loom-optimizer="clip-norm=1.0" | FileCheck %s --check-prefix=CLIP
// RUN: loom-opt %s --loom-optimizer | loom-opt > /dev/null

func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}, %x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = loom.reduce_sum %0 [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  %2 = loom.sum_to %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1, %2 : tensor<f32>, tensor<3xf32>
}

// The gradient function stays; the step comes after it.
// CHECK-LABEL: func.func @loss_grad
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:.*]]: tensor<3xf32> {loom.param = "w"},
// CHECK-SAME: %[[M:.*]]: tensor<3xf32> {loom.opt_state = "exp_avg.w"},
// CHECK-SAME: %[[V:.*]]: tensor<3xf32> {loom.opt_state = "exp_avg_sq.w"},
// CHECK-SAME: %[[STEP:.*]]: tensor<i64> {loom.input = "step"},
// CHECK-SAME: %[[X:.*]]: tensor<?x3xf32> {loom.input = "x"})
// CHECK-SAME: -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "param.w"},
// CHECK-SAME: tensor<3xf32> {loom.output = "exp_avg.w"}, tensor<3xf32> {loom.output = "exp_avg_sq.w"})
// The cloned gradient computation:
// CHECK: %[[LOSS:.*]] = loom.reduce_sum
// CHECK: %[[G:.*]] = loom.sum_to %[[X]], %[[W]]
// The schedule: min(step^-0.5, step * warmup^-1.5) * d_model^-0.5, here 10^-1.5 and 4^-0.5.
// CHECK: %[[T:.*]] = loom.cast %[[STEP]] : tensor<i64> to tensor<f32>
// CHECK: %[[DECAY:.*]] = loom.rsqrt %[[T]]
// CHECK: %[[W15:.*]] = loom.constant dense<0.031622{{[0-9]*}}> : tensor<f32>
// CHECK: %[[RAMP:.*]] = loom.mul %[[T]], %[[W15]]
// CHECK: %[[MIN:.*]] = loom.minimum %[[DECAY]], %[[RAMP]]
// CHECK: %[[HALF:.*]] = loom.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[LR:.*]] = loom.mul %[[MIN]], %[[HALF]]
// Bias corrections 1 - beta^t = 1 - exp(t * log(beta)), log(0.9) and log(0.98):
// CHECK: loom.constant dense<-0.105360{{[0-9]*}}>
// CHECK: %[[BC1:.*]] = loom.sub
// CHECK: %[[STEPSIZE:.*]] = loom.div %[[LR]], %[[BC1]]
// CHECK: loom.constant dense<-0.020202{{[0-9]*}}>
// CHECK: %[[BC2:.*]] = loom.sub
// CHECK: %[[SQRTBC2:.*]] = loom.sqrt %[[BC2]]
// Adam's moments with beta1 0.9 and beta2 0.98, epsilon 1e-9:
// CHECK: %[[B1:.*]] = loom.constant dense<0.899999976> : tensor<f32>
// CHECK: %[[OMB1:.*]] = loom.constant dense<1.000000e-01> : tensor<f32>
// CHECK: %[[B2:.*]] = loom.constant dense<9.800000e-01> : tensor<f32>
// CHECK: %[[OMB2:.*]] = loom.constant dense<2.000000e-02> : tensor<f32>
// CHECK: %[[EPS:.*]] = loom.constant dense<9.99999971E-10> : tensor<f32>
// CHECK: %[[M1:.*]] = loom.mul %[[M]], %[[B1]]
// CHECK: %[[GS:.*]] = loom.mul %[[G]], %[[OMB1]]
// CHECK: %[[M2:.*]] = loom.add %[[M1]], %[[GS]]
// CHECK: %[[V1:.*]] = loom.mul %[[V]], %[[B2]]
// CHECK: %[[GG:.*]] = loom.mul %[[G]], %[[G]]
// CHECK: %[[GGS:.*]] = loom.mul %[[GG]], %[[OMB2]]
// CHECK: %[[V2:.*]] = loom.add %[[V1]], %[[GGS]]
// CHECK: %[[RMS:.*]] = loom.sqrt %[[V2]]
// CHECK: %[[RMSC:.*]] = loom.div %[[RMS]], %[[SQRTBC2]]
// CHECK: %[[DEN:.*]] = loom.add %[[RMSC]], %[[EPS]]
// CHECK: %[[RATIO:.*]] = loom.div %[[M2]], %[[DEN]]
// CHECK: %[[UPD:.*]] = loom.mul %[[RATIO]], %[[STEPSIZE]]
// CHECK: %[[NEW:.*]] = loom.sub %[[W]], %[[UPD]]
// CHECK: return %[[LOSS]], %[[NEW]], %[[M2]], %[[V2]]

// With clipping, the gradient is scaled by min(1, clip / (norm + 1e-6)) first.
// CLIP-LABEL: func.func @train_step
// CLIP: %[[G:.*]] = loom.sum_to
// CLIP: %[[SQ:.*]] = loom.mul %[[G]], %[[G]]
// CLIP: %[[SUM:.*]] = loom.reduce_sum %[[SQ]] [0]
// CLIP: %[[NORM:.*]] = loom.sqrt %[[SUM]]
// CLIP: %[[SCALE:.*]] = loom.minimum
// CLIP: loom.mul %[[G]], %[[SCALE]]
