// Every elementwise op parses, verifies and prints back to the same text.
// RUN: loom-opt %s | loom-opt | FileCheck %s

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  // CHECK: loom.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %0 = loom.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.sub
  %1 = loom.sub %0, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.mul
  %2 = loom.mul %1, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.div
  %3 = loom.div %2, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.maximum
  %4 = loom.maximum %3, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.minimum
  %5 = loom.minimum %4, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  // CHECK: loom.pow
  %6 = loom.pow %5, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %6 : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @compare_select
func.func @compare_select(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: loom.compare lt, %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  %c = loom.compare lt, %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  // CHECK: loom.select
  %s = loom.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: loom.constant dense<1.000000e+00> : tensor<f32>
  %k = loom.constant dense<1.0> : tensor<f32>
  %r = loom.add %s, %k : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
