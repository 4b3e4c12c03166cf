// loom-fuse-linear folds x . W^T and its bias / activation / residual
// epilogue into loom.linear; with remarks=true every matmul it leaves alone
// says why.
// RUN: loom-opt %s --loom-fuse-linear | FileCheck %s
// RUN: loom-opt %s --loom-fuse-linear=remarks=true --verify-diagnostics -o /dev/null

// The position-wise FFN as the frontend writes it (no dropout), inside a
// residual connection: two loom.linear, relu in the first, the residual in
// the second.
// CHECK-LABEL: func.func @ffn(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[W1:[a-z0-9]+]]: tensor<64x32xf32>, %[[B1:[a-z0-9]+]]: tensor<64xf32>, %[[W2:[a-z0-9]+]]: tensor<32x64xf32>, %[[B2:[a-z0-9]+]]: tensor<32xf32>)
// CHECK-NEXT:    %[[H:.*]] = loom.linear %[[X]], %[[W1]] bias(%[[B1]] : tensor<64xf32>) activation relu : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
// CHECK-NEXT:    %[[Y:.*]] = loom.linear %[[H]], %[[W2]] bias(%[[B2]] : tensor<32xf32>) residual(%[[X]] : tensor<?x?x32xf32>) : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT:    return %[[Y]]
func.func @ffn(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>,
               %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %0 = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %1 = loom.add %0, %b1 : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = loom.relu %1 : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %3 = loom.matmul %2, %w2 {transpose_rhs} : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %4 = loom.add %3, %b2 : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %5 = loom.add %x, %4 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %5 : tensor<?x?x32xf32>
}

// With dropout, the dropouts end each epilogue: relu stays in the first
// linear, the residual add stays outside the second.
// CHECK-LABEL: func.func @ffn_dropout(
// CHECK:         %[[H:.*]] = loom.linear %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<64xf32>) activation relu :
// CHECK-NEXT:    %[[D:.*]] = loom.dropout %[[H]]
// CHECK-NEXT:    %[[Y:.*]] = loom.linear %[[D]], %{{.*}} bias(%{{.*}} : tensor<32xf32>) : tensor<?x?x64xf32>
// CHECK-NEXT:    %[[E:.*]] = loom.dropout %[[Y]]
// CHECK-NEXT:    loom.add %{{.*}}, %[[E]]
func.func @ffn_dropout(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>,
                       %w2: tensor<32x64xf32>, %b2: tensor<32xf32>, %seed: tensor<i64>) -> tensor<?x?x32xf32> {
  %0 = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %1 = loom.add %0, %b1 : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %2 = loom.relu %1 : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %3 = loom.dropout %2, %seed {rate = 0.1 : f64, offset = 0 : i64} : (tensor<?x?x64xf32>, tensor<i64>) -> tensor<?x?x64xf32>
  %4 = loom.matmul %3, %w2 {transpose_rhs} : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %5 = loom.add %4, %b2 : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %6 = loom.dropout %5, %seed {rate = 0.1 : f64, offset = 1 : i64} : (tensor<?x?x32xf32>, tensor<i64>) -> tensor<?x?x32xf32>
  %7 = loom.add %x, %6 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %7 : tensor<?x?x32xf32>
}

// Bias first, gelu, a rank-2 input; a residual without a bias.
// CHECK-LABEL: func.func @orders(
// CHECK-NEXT:    %[[G:.*]] = loom.linear %arg0, %arg1 bias(%arg2 : tensor<5xf32>) activation gelu : tensor<8x4xf32>, tensor<5x4xf32> -> tensor<8x5xf32>
// CHECK-NEXT:    %[[R:.*]] = loom.linear %arg0, %arg1 residual(%arg3 : tensor<8x5xf32>) : tensor<8x4xf32>, tensor<5x4xf32> -> tensor<8x5xf32>
// CHECK-NEXT:    return %[[G]], %[[R]]
func.func @orders(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>,
                  %r: tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %1 = loom.add %b, %0 : (tensor<5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %2 = loom.gelu %1 : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %3 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %4 = loom.add %3, %r : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  return %2, %4 : tensor<8x5xf32>, tensor<8x5xf32>
}

// A product read twice stays materialized: the linear has no epilogue.
// CHECK-LABEL: func.func @shared_product(
// CHECK-NEXT:    %[[P:.*]] = loom.linear %arg0, %arg1 : tensor<8x4xf32>, tensor<5x4xf32> -> tensor<8x5xf32>
// CHECK-NEXT:    loom.add %[[P]], %arg2
// CHECK-NEXT:    loom.relu %[[P]]
func.func @shared_product(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  // expected-remark @below {{epilogue stops: the product has 2 uses}}
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %1 = loom.add %0, %b : (tensor<8x5xf32>, tensor<5xf32>) -> tensor<8x5xf32>
  %2 = loom.relu %0 : (tensor<8x5xf32>) -> tensor<8x5xf32>
  return %1, %2 : tensor<8x5xf32>, tensor<8x5xf32>
}

// The biased value read twice: the bias is fused, relu is not.
// CHECK-LABEL: func.func @shared_bias(
// CHECK-NEXT:    %[[Q:.*]] = loom.linear %arg0, %arg1 bias(%arg2 : tensor<5xf32>) : tensor<8x4xf32>, tensor<5x4xf32> -> tensor<8x5xf32>
// CHECK-NEXT:    loom.relu %[[Q]]
// CHECK-NEXT:    return
func.func @shared_bias(%x: tensor<8x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  // expected-remark @below {{epilogue stops: its last fused value has 2 uses}}
  %0 = loom.matmul %x, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  %1 = loom.add %0, %b : (tensor<8x5xf32>, tensor<5xf32>) -> tensor<8x5xf32>
  %2 = loom.relu %1 : (tensor<8x5xf32>) -> tensor<8x5xf32>
  return %1, %2 : tensor<8x5xf32>, tensor<8x5xf32>
}

// Other layouts and batched products are declined.
// CHECK-LABEL: func.func @declined(
// CHECK-NOT:     loom.linear
// CHECK:         return
func.func @declined(%x: tensor<8x4xf32>, %wt: tensor<4x5xf32>, %xt: tensor<4x8xf32>,
                    %w: tensor<5x4xf32>, %q: tensor<2x3x8x4xf32>, %k: tensor<2x3x8x4xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>, tensor<2x3x8x8xf32>) {
  // expected-remark @below {{not fused: the weight is not read transposed (no transpose_rhs); loom.linear takes torch's [N, K] layout}}
  %0 = loom.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
  // expected-remark @below {{not fused: the input is read transposed (transpose_lhs); loom.linear reads x [..., K] as it is}}
  %1 = loom.matmul %xt, %w {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<5x4xf32>) -> tensor<8x5xf32>
  // expected-remark @below {{not fused: the right operand has rank 4; loom.linear takes a rank-2 weight [N, K]}}
  %2 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
  return %0, %1, %2 : tensor<8x5xf32>, tensor<8x5xf32>, tensor<2x3x8x8xf32>
}
