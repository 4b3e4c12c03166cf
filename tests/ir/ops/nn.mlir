// Contractions, reductions and neural-network ops parse, verify and print back.
// RUN: loom-opt %s | loom-opt | FileCheck %s

// CHECK-LABEL: func.func @matmuls
func.func @matmuls(%x: tensor<?x?x16xf32>, %w: tensor<32x16xf32>, %q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x4x?x?xf32>, tensor<?x4x8x8xf32>) {
  // CHECK: loom.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  // CHECK: loom.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  %1 = loom.matmul %q, %k {transpose_rhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  // CHECK: loom.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x8x8xf32>
  %2 = loom.matmul %q, %k {transpose_lhs} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x8x8xf32>
  return %0, %1, %2 : tensor<?x?x32xf32>, tensor<?x4x?x?xf32>, tensor<?x4x8x8xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<?x5x7xf32>) -> (tensor<?x1x1xf32>, tensor<5xf32>, tensor<?x5xf32>) {
  // CHECK: loom.reduce_sum %{{.*}} [1, 2] keep_dims : (tensor<?x5x7xf32>) -> tensor<?x1x1xf32>
  %0 = loom.reduce_sum %x [1, 2] keep_dims : (tensor<?x5x7xf32>) -> tensor<?x1x1xf32>
  // CHECK: loom.reduce_mean %{{.*}} [0, 2] : (tensor<?x5x7xf32>) -> tensor<5xf32>
  %1 = loom.reduce_mean %x [0, 2] : (tensor<?x5x7xf32>) -> tensor<5xf32>
  // CHECK: loom.reduce_max %{{.*}} [2] : (tensor<?x5x7xf32>) -> tensor<?x5xf32>
  %2 = loom.reduce_max %x [2] : (tensor<?x5x7xf32>) -> tensor<?x5xf32>
  return %0, %1, %2 : tensor<?x1x1xf32>, tensor<5xf32>, tensor<?x5xf32>
}

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %seed: tensor<i64>,
              %ids: tensor<?x?xi32>) -> (tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<?x?x8xf32>) {
  // CHECK: loom.softmax %{{.*}} {axis = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %0 = loom.softmax %x {axis = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: loom.log_softmax %{{.*}} {axis = 2 : i64}
  %1 = loom.log_softmax %0 {axis = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: loom.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %2 = loom.layer_norm %1, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: loom.dropout %{{.*}}, %{{.*}} {offset = 3 : i64, rate = 1.000000e-01 : f64} : (tensor<?x?x8xf32>, tensor<i64>) -> tensor<?x?x8xf32>
  %3 = loom.dropout %2, %seed {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x?x8xf32>, tensor<i64>) -> tensor<?x?x8xf32>
  // CHECK: loom.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<?x?x8xf32>, tensor<?x?xi32>) -> tensor<?x?xf32>
  %4 = loom.cross_entropy %3, %ids {label_smoothing = 0.1 : f64, ignore_index = 0 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi32>) -> tensor<?x?xf32>
  // CHECK: loom.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<?x?x8xf32>, tensor<?x?xi32>, tensor<?x?xf32>) -> tensor<?x?x8xf32>
  %5 = loom.cross_entropy_grad %3, %ids, %4 {label_smoothing = 0.1 : f64, ignore_index = 0 : i64} : (tensor<?x?x8xf32>, tensor<?x?xi32>, tensor<?x?xf32>) -> tensor<?x?x8xf32>
  return %3, %4, %5 : tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @masks_and_positions
func.func @masks_and_positions(%ids: tensor<?x?xi32>) -> (tensor<?x?xf32>, tensor<?x1x1x?xf32>, tensor<?xf32>, tensor<?x?x5xf32>) {
  // CHECK: loom.causal_mask %{{.*}} {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  %0 = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  // CHECK: loom.padding_mask %{{.*}} {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %1 = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  // CHECK: loom.iota %{{.*}} {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?xf32>
  %2 = loom.iota %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?xf32>
  // CHECK: loom.one_hot %{{.*}} {depth = 5 : i64} : tensor<?x?xi32> -> tensor<?x?x5xf32>
  %3 = loom.one_hot %ids {depth = 5 : i64} : tensor<?x?xi32> -> tensor<?x?x5xf32>
  return %0, %1, %2, %3 : tensor<?x?xf32>, tensor<?x1x1x?xf32>, tensor<?xf32>, tensor<?x?x5xf32>
}
