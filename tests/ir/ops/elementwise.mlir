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

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // CHECK: loom.neg
  %0 = loom.neg %x : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.abs
  %1 = loom.abs %0 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.exp
  %2 = loom.exp %1 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.log
  %3 = loom.log %2 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.sqrt
  %4 = loom.sqrt %3 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.rsqrt
  %5 = loom.rsqrt %4 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.tanh
  %6 = loom.tanh %5 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.sigmoid
  %7 = loom.sigmoid %6 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.relu
  %8 = loom.relu %7 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.gelu
  %9 = loom.gelu %8 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.erf
  %10 = loom.erf %9 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.sin
  %11 = loom.sin %10 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  // CHECK: loom.cos
  %12 = loom.cos %11 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %12 : tensor<?x?xf32>
}

// CHECK-LABEL: func.func @casts_and_constants
func.func @casts_and_constants(%ids: tensor<?x?xi32>) -> (tensor<?x?xf32>, tensor<?x?xi1>, tensor<2x2xbf16>, tensor<3xi64>) {
  // CHECK: loom.cast %{{.*}} : tensor<?x?xi32> to tensor<?x?xf32>
  %0 = loom.cast %ids : tensor<?x?xi32> to tensor<?x?xf32>
  // CHECK: loom.cast %{{.*}} : tensor<?x?xi32> to tensor<?x?xi1>
  %1 = loom.cast %ids : tensor<?x?xi32> to tensor<?x?xi1>
  // CHECK: loom.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xbf16>
  %2 = loom.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xbf16>
  // CHECK: loom.constant dense<[1, 2, 3]> : tensor<3xi64>
  %3 = loom.constant dense<[1, 2, 3]> : tensor<3xi64>
  return %0, %1, %2, %3 : tensor<?x?xf32>, tensor<?x?xi1>, tensor<2x2xbf16>, tensor<3xi64>
}

// CHECK-LABEL: func.func @f64_and_f16
func.func @f64_and_f16(%a: tensor<4xf64>, %b: tensor<4xf16>) -> (tensor<4xf64>, tensor<4xf16>) {
  // CHECK: loom.mul %{{.*}}, %{{.*}} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %0 = loom.mul %a, %a : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  // CHECK: loom.exp %{{.*}} : (tensor<4xf16>) -> tensor<4xf16>
  %1 = loom.exp %b : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1 : tensor<4xf64>, tensor<4xf16>
}
