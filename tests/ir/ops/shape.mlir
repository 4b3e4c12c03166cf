// Shape and data-movement ops parse, verify and print back.
// RUN: loom-opt %s | loom-opt | FileCheck %s

// CHECK-LABEL: func.func @heads
func.func @heads(%x: tensor<?x?x512xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x?x512xf32>) {
  // CHECK: loom.reshape %{{.*}} [0, 0, 8, 64] : (tensor<?x?x512xf32>) -> tensor<?x?x8x64xf32>
  %0 = loom.reshape %x [0, 0, 8, 64] : (tensor<?x?x512xf32>) -> tensor<?x?x8x64xf32>
  // CHECK: loom.transpose %{{.*}} [0, 2, 1, 3] : (tensor<?x?x8x64xf32>) -> tensor<?x8x?x64xf32>
  %1 = loom.transpose %0 [0, 2, 1, 3] : (tensor<?x?x8x64xf32>) -> tensor<?x8x?x64xf32>
  // CHECK: loom.reshape_as %{{.*}}, %{{.*}} : (tensor<?x?x8x64xf32>, tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
  %2 = loom.reshape_as %0, %x : (tensor<?x?x8x64xf32>, tensor<?x?x512xf32>) -> tensor<?x?x512xf32>
  return %1, %2 : tensor<?x8x?x64xf32>, tensor<?x?x512xf32>
}

// CHECK-LABEL: func.func @reshape_infer
func.func @reshape_infer(%x: tensor<6x4xf32>) -> (tensor<3x8xf32>, tensor<2x1x3x4xf32>) {
  // CHECK: loom.reshape %{{.*}} [-1, 8] : (tensor<6x4xf32>) -> tensor<3x8xf32>
  %0 = loom.reshape %x [-1, 8] : (tensor<6x4xf32>) -> tensor<3x8xf32>
  // CHECK: loom.expand_dims %{{.*}} [1] : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  %r = loom.reshape %x [2, 3, 4] : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %1 = loom.expand_dims %r [1] : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  return %0, %1 : tensor<3x8xf32>, tensor<2x1x3x4xf32>
}

// CHECK-LABEL: func.func @slices
func.func @slices(%tgt: tensor<?x?xi32>, %w: tensor<96x32xf32>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<32x32xf32>, tensor<96x32xf32>) {
  // CHECK: loom.slice %{{.*}} {dim = 1 : i64, end = -1 : i64, start = 0 : i64} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %0 = loom.slice %tgt {dim = 1 : i64, start = 0 : i64, end = -1 : i64} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  // CHECK: loom.slice %{{.*}} {dim = 1 : i64, end = 0 : i64, start = 1 : i64}
  %1 = loom.slice %tgt {dim = 1 : i64, start = 1 : i64, end = 0 : i64} : (tensor<?x?xi32>) -> tensor<?x?xi32>
  // CHECK: loom.slice %{{.*}} {dim = 0 : i64, end = 64 : i64, start = 32 : i64} : (tensor<96x32xf32>) -> tensor<32x32xf32>
  %2 = loom.slice %w {dim = 0 : i64, start = 32 : i64, end = 64 : i64} : (tensor<96x32xf32>) -> tensor<32x32xf32>
  // CHECK: loom.slice_grad %{{.*}}, %{{.*}} {dim = 0 : i64, end = 64 : i64, start = 32 : i64} : (tensor<32x32xf32>, tensor<96x32xf32>) -> tensor<96x32xf32>
  %3 = loom.slice_grad %2, %w {dim = 0 : i64, start = 32 : i64, end = 64 : i64} : (tensor<32x32xf32>, tensor<96x32xf32>) -> tensor<96x32xf32>
  return %0, %1, %2, %3 : tensor<?x?xi32>, tensor<?x?xi32>, tensor<32x32xf32>, tensor<96x32xf32>
}

// CHECK-LABEL: func.func @concat_broadcast
func.func @concat_broadcast(%cache: tensor<?x4x?x8xf32>, %new: tensor<?x4x1x8xf32>, %b: tensor<8xf32>)
    -> (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>, tensor<8xf32>, tensor<4x3xf32>) {
  // CHECK: loom.concat %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x?x8xf32>
  %0 = loom.concat %cache, %new {dim = 2 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x?x8xf32>
  // CHECK: loom.broadcast_as %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x1x8xf32>
  %1 = loom.broadcast_as %b, %new : (tensor<8xf32>, tensor<?x4x1x8xf32>) -> tensor<?x4x1x8xf32>
  // CHECK: loom.sum_to %{{.*}}, %{{.*}} : (tensor<?x4x1x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = loom.sum_to %1, %b : (tensor<?x4x1x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = loom.constant dense<1.0> : tensor<4x1xf32>
  %c = loom.constant dense<2.0> : tensor<4x2xf32>
  // CHECK: loom.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
  %3 = loom.concat %a, %c {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
  return %0, %1, %2, %3 : tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>, tensor<8xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%table: tensor<100x16xf32>, %ids: tensor<?x?xi32>) -> (tensor<?x?x16xf32>, tensor<100x16xf32>) {
  // CHECK: loom.gather %{{.*}}, %{{.*}} : (tensor<100x16xf32>, tensor<?x?xi32>) -> tensor<?x?x16xf32>
  %0 = loom.gather %table, %ids : (tensor<100x16xf32>, tensor<?x?xi32>) -> tensor<?x?x16xf32>
  // CHECK: loom.scatter_add %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<100x16xf32>) -> tensor<100x16xf32>
  %1 = loom.scatter_add %0, %ids, %table : (tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<100x16xf32>) -> tensor<100x16xf32>
  return %0, %1 : tensor<?x?x16xf32>, tensor<100x16xf32>
}
