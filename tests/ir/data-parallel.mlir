// loom-data-parallel averages a gradient function's loss and gradients over
// the ranks of a job, weighting each rank by its real tokens (the op marked
// loom.token_count): one all-reduce for the token count and the loss's sum
// where the loss is known, then one per bucket of gradients, right after the
// last producer of the bucket, in the order the backward pass completes them.
// RUN: loom-opt %s --split-input-file --loom-data-parallel="bucket-bytes=150" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-data-parallel | FileCheck %s --check-prefix=DEFAULT
// What it prints parses back.
// RUN: loom-opt %s --split-input-file --loom-data-parallel | loom-opt --split-input-file > /dev/null

// The backward pass completes grad.b (32 bytes), then grad.w (128), then
// grad.u (1024); with 150-byte buckets the first two share one.
func.func @loss_grad(%w: tensor<4x8xf32> {loom.param = "w"}, %b: tensor<8xf32> {loom.param = "b"},
                     %u: tensor<16x16xf32> {loom.param = "u"}, %x: tensor<3x4xf32> {loom.input = "x"},
                     %m: tensor<3xf32> {loom.input = "mask"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<4x8xf32> {loom.output = "grad.w"},
        tensor<8xf32> {loom.output = "grad.b"}, tensor<16x16xf32> {loom.output = "grad.u"}) {
  %c = loom.reduce_sum %m [0] {loom.token_count} : (tensor<3xf32>) -> tensor<f32>
  %one = loom.constant dense<1.0> : tensor<f32>
  %cmax = loom.maximum %c, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %s = loom.reduce_sum %x [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
  %loss = loom.div %s, %cmax : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %gb = loom.broadcast_as %loss, %b : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %gw = loom.broadcast_as %loss, %w : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %gu = loom.broadcast_as %loss, %u : (tensor<f32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %loss, %gw, %gb, %gu : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<16x16xf32>
}

// CHECK-LABEL: func.func @loss_grad(
// CHECK:       %[[C:.*]] = loom.reduce_sum %{{.*}} [0] {loom.token_count}
// CHECK:       %[[ONE:.*]] = loom.constant dense<1.000000e+00>
// CHECK:       %[[LOCAL:.*]] = loom.maximum %[[C]], %[[ONE]]
// CHECK:       %[[LOSS:.*]] = loom.div
// CHECK:       %[[LSUM:.*]] = loom.mul %[[LOSS]], %[[LOCAL]]
// CHECK:       %[[T:.*]]:2 = loom.all_reduce %[[C]], %[[LSUM]] {loom.bucket = "loss"} : tensor<f32>, tensor<f32>
// CHECK:       %[[GB:.*]] = loom.broadcast_as
// CHECK:       %[[GW:.*]] = loom.broadcast_as
// CHECK:       %[[SB:.*]] = loom.mul %[[GB]], %[[LOCAL]]
// CHECK:       %[[SW:.*]] = loom.mul %[[GW]], %[[LOCAL]]
// CHECK:       %[[B0:.*]]:2 = loom.all_reduce %[[SB]], %[[SW]] {loom.bucket = "grads 0, 160 bytes"} : tensor<8xf32>, tensor<4x8xf32>
// CHECK:       %[[GU:.*]] = loom.broadcast_as
// CHECK:       %[[SU:.*]] = loom.mul %[[GU]], %[[LOCAL]]
// CHECK:       %[[B1:.*]] = loom.all_reduce %[[SU]] {loom.bucket = "grads 1, 1024 bytes"} : tensor<16x16xf32>
// CHECK:       %[[TOTAL:.*]] = loom.maximum %[[T]]#0
// CHECK:       %[[L:.*]] = loom.div %[[T]]#1, %[[TOTAL]]
// CHECK-DAG:   %[[W:.*]] = loom.div %[[B0]]#1, %[[TOTAL]]
// CHECK-DAG:   %[[B:.*]] = loom.div %[[B0]]#0, %[[TOTAL]]
// CHECK-DAG:   %[[U:.*]] = loom.div %[[B1]], %[[TOTAL]]
// CHECK:       return %[[L]], %[[W]], %[[B]], %[[U]]

// With the default 25 MiB, every gradient is in one bucket, after the last.
// DEFAULT-LABEL: func.func @loss_grad(
// DEFAULT:   loom.all_reduce %{{.*}}, %{{.*}} {loom.bucket = "loss"}
// DEFAULT:   loom.broadcast_as
// DEFAULT:   loom.broadcast_as
// DEFAULT:   loom.all_reduce %{{.*}}, %{{.*}}, %{{.*}} {loom.bucket = "grads 0, 1184 bytes"}
// DEFAULT-NOT: loom.all_reduce

// -----

// Without a token count every rank weighs 1: the all-reduced count is the
// number of ranks, and the loss and gradients are their means.
func.func @loss_grad(%w: tensor<3xf32> {loom.param = "w"}, %x: tensor<?x3xf32> {loom.input = "x"})
    -> (tensor<f32> {loom.output = "loss"}, tensor<3xf32> {loom.output = "grad.w"}) {
  %0 = loom.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = loom.reduce_sum %0 [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  %2 = loom.sum_to %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1, %2 : tensor<f32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @loss_grad(
// DEFAULT-LABEL: func.func @loss_grad(
// CHECK:       %[[ONE:.*]] = loom.constant dense<1.000000e+00> : tensor<f32>
// CHECK:       loom.all_reduce %[[ONE]], %{{.*}} {loom.bucket = "loss"}
// CHECK:       loom.all_reduce %{{.*}} {loom.bucket = "grads 0, 12 bytes"} : tensor<3xf32>
