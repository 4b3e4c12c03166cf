// The fused ops that the fusion passes introduce parse, verify and print back.
// RUN: loom-opt %s | loom-opt | FileCheck %s

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x8xf32>,
                     %mask: tensor<?x1x1x?xf32>, %seed: tensor<i64>, %dout: tensor<?x4x?x8xf32>)
    -> (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) {
  // CHECK: %[[O:[a-z0-9_]+]], %[[L:[a-z0-9_]+]] = loom.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<?x1x1x?xf32>) seed(%{{.*}} : tensor<i64>) {causal, dropout_offset = 5 : i64, dropout_rate = 1.000000e-01 : f64, scale = 0.35355339059327373 : f64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?xf32>
  %out, %lse = loom.attention %q, %k, %v mask(%mask : tensor<?x1x1x?xf32>) seed(%seed : tensor<i64>) {scale = 0.35355339059327373 : f64, causal, dropout_rate = 0.1 : f64, dropout_offset = 5 : i64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?xf32>
  // CHECK: loom.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]], %{{.*}} mask(
  %dq, %dk, %dv = loom.attention_grad %q, %k, %v, %out, %lse, %dout mask(%mask : tensor<?x1x1x?xf32>) seed(%seed : tensor<i64>) {scale = 0.35355339059327373 : f64, causal, dropout_rate = 0.1 : f64, dropout_offset = 5 : i64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
  // Without mask and dropout, the optional parts disappear.
  // CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : tensor<?x4x?x8xf32>
  %o2, %l2 = loom.attention %q, %k, %v {scale = 0.125 : f64} : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>, tensor<?x4x?xf32>
  return %out, %dq, %dk, %o2 : tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<?x?x16xf32>, %w1: tensor<64x16xf32>, %b1: tensor<64xf32>,
                  %w2: tensor<16x64xf32>, %b2: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // CHECK: loom.linear %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<64xf32>) activation relu : tensor<?x?x16xf32>, tensor<64x16xf32> -> tensor<?x?x64xf32>
  %h = loom.linear %x, %w1 bias(%b1 : tensor<64xf32>) activation relu : tensor<?x?x16xf32>, tensor<64x16xf32> -> tensor<?x?x64xf32>
  // CHECK: loom.linear %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<16xf32>) residual(%{{.*}} : tensor<?x?x16xf32>) : tensor<?x?x64xf32>, tensor<16x64xf32> -> tensor<?x?x16xf32>
  %y = loom.linear %h, %w2 bias(%b2 : tensor<16xf32>) residual(%x : tensor<?x?x16xf32>) : tensor<?x?x64xf32>, tensor<16x64xf32> -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// CHECK-LABEL: func.func @add_layer_norm
func.func @add_layer_norm(%x: tensor<?x16xf32>, %r: tensor<?x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  // CHECK: loom.add_layer_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %s, %n = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  return %s, %n : tensor<?x16xf32>, tensor<?x16xf32>
}

// CHECK-LABEL: func.func @fusion
func.func @fusion(%m: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: %{{.*}}:2 = loom.fusion(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK: ^bb0(%[[A:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>):
  // CHECK: loom.yield %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>
  %r:2 = loom.fusion(%m, %g) : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %c = loom.constant dense<0.9> : tensor<f32>
    %0 = loom.mul %a, %c : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %1 = loom.add %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %2 = loom.mul %b, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    loom.yield %1, %2 : tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// Keys and values held position first ([T, ..., D]).
// CHECK-LABEL: func.func @attention_keys_position_major
// CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} {keys_position_major, scale = 1.250000e-01 : f64} : tensor<?x?x4x1x8xf32>, tensor<?x?x?x4x8xf32>, tensor<?x?x?x4x8xf32> -> tensor<?x?x4x1x8xf32>, tensor<?x?x4x1xf32>
func.func @attention_keys_position_major(%q: tensor<?x?x4x1x8xf32>, %k: tensor<?x?x?x4x8xf32>) -> tensor<?x?x4x1x8xf32> {
  %o, %l = loom.attention %q, %k, %k {keys_position_major, scale = 0.125 : f64} : tensor<?x?x4x1x8xf32>, tensor<?x?x?x4x8xf32>, tensor<?x?x?x4x8xf32> -> tensor<?x?x4x1x8xf32>, tensor<?x?x4x1xf32>
  return %o : tensor<?x?x4x1x8xf32>
}

// bf16 factors with f32 sums (loom-mixed-precision's products).
// CHECK-LABEL: func.func @mixed_products
// CHECK: loom.linear %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<4xf32>) : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x4xf32>
// CHECK: loom.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<?x4xbf16>, tensor<?x8xbf16>) -> tensor<4x8xf32>
func.func @mixed_products(%x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>, %b: tensor<4xf32>, %g: tensor<?x4xbf16>)
    -> (tensor<?x4xf32>, tensor<4x8xf32>) {
  %y = loom.linear %x, %w bias(%b : tensor<4xf32>) : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x4xf32>
  %dw = loom.matmul %g, %x {transpose_lhs} : (tensor<?x4xbf16>, tensor<?x8xbf16>) -> tensor<4x8xf32>
  return %y, %dw : tensor<?x4xf32>, tensor<4x8xf32>
}

// A decoder's caches held in bf16: f32 queries, bf16 keys and values, f32
// results.
// CHECK-LABEL: func.func @attention_narrow_keys
// CHECK: loom.attention %{{.*}}, %{{.*}}, %{{.*}} {keys_position_major, scale = 1.250000e-01 : f64} : tensor<?x4x1x8xf32>, tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16> -> tensor<?x4x1x8xf32>, tensor<?x4x1xf32>
func.func @attention_narrow_keys(%q: tensor<?x4x1x8xf32>, %k: tensor<?x?x4x8xbf16>) -> tensor<?x4x1x8xf32> {
  %o, %l = loom.attention %q, %k, %k {keys_position_major, scale = 0.125 : f64} : tensor<?x4x1x8xf32>, tensor<?x?x4x8xbf16>, tensor<?x?x4x8xbf16> -> tensor<?x4x1x8xf32>, tensor<?x4x1xf32>
  return %o : tensor<?x4x1x8xf32>
}
