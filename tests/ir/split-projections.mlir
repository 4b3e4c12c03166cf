// loom-split-projections gives each slice of a packed projection its own
// product with the rows of the weight (and bias) it keeps; with
// remarks=true, a sliced product it leaves says why.
// RUN: loom-opt %s --loom-split-projections | FileCheck %s
// RUN: loom-opt %s --loom-split-projections=remarks=true --verify-diagnostics -o /dev/null

// PyTorch's packed q, k, v: three products, three biases, no slice of an
// activation left.
// CHECK-LABEL: func.func @qkv(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x4xf32>, %[[W:[a-z0-9]+]]: tensor<12x4xf32>, %[[B:[a-z0-9]+]]: tensor<12xf32>)
// CHECK:         %[[WQ:.*]] = loom.slice %[[W]] {dim = 0 : i64, end = 4 : i64, start = 0 : i64}
// CHECK:         %[[PQ:.*]] = loom.matmul %[[X]], %[[WQ]] {transpose_rhs}
// CHECK:         %[[BQ:.*]] = loom.slice %[[B]] {dim = 0 : i64, end = 4 : i64, start = 0 : i64}
// CHECK:         %[[Q:.*]] = loom.add %[[BQ]], %[[PQ]]
// CHECK:         loom.slice %[[W]] {dim = 0 : i64, end = 8 : i64, start = 4 : i64}
// CHECK:         loom.slice %[[W]] {dim = 0 : i64, end = 0 : i64, start = 8 : i64}
// CHECK-NOT:     tensor<?x?x12xf32>
// CHECK:         return %[[Q]]
func.func @qkv(%x: tensor<?x?x4xf32>, %w: tensor<12x4xf32>, %b: tensor<12xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<?x?x4xf32>, tensor<12x4xf32>) -> tensor<?x?x12xf32>
  %s = loom.add %b, %p : (tensor<12xf32>, tensor<?x?x12xf32>) -> tensor<?x?x12xf32>
  %q = loom.slice %s {dim = 2 : i64, start = 0 : i64, end = 4 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  %k = loom.slice %s {dim = 2 : i64, start = 4 : i64, end = 8 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  %v = loom.slice %s {dim = 2 : i64, start = 8 : i64, end = 0 : i64} : (tensor<?x?x12xf32>) -> tensor<?x?x4xf32>
  return %q, %k, %v : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// Without a bias, and with slices counted from the end: k and v of a
// cross-attention's packed [2E, E] weight.
// CHECK-LABEL: func.func @kv_no_bias(
// CHECK:         loom.slice %{{.*}} {dim = 0 : i64, end = 4 : i64, start = 0 : i64} : (tensor<8x4xf32>)
// CHECK:         loom.matmul
// CHECK:         loom.slice %{{.*}} {dim = 0 : i64, end = 0 : i64, start = 4 : i64} : (tensor<8x4xf32>)
// CHECK:         loom.matmul
// CHECK-NOT:     loom.add
func.func @kv_no_bias(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %k = loom.slice %p {dim = 1 : i64, start = 0 : i64, end = -4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %v = loom.slice %p {dim = 1 : i64, start = -4 : i64, end = 0 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k, %v : tensor<3x4xf32>, tensor<3x4xf32>
}

// The packed sum is read whole too: it stays.
// CHECK-LABEL: func.func @read_whole(
// CHECK:         loom.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
// CHECK-NOT:     loom.matmul
func.func @read_whole(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>)
    -> (tensor<3x4xf32>, tensor<3x8xf32>) {
  // expected-remark @+1 {{packed projection not split: the packed product is also read whole}}
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %s = loom.add %p, %b : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %k = loom.slice %s {dim = 1 : i64, start = 0 : i64, end = 4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k, %s : tensor<3x4xf32>, tensor<3x8xf32>
}

// A slice of another dim than the last: not split.
// CHECK-LABEL: func.func @rows(
// CHECK:         loom.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    loom.slice
func.func @rows(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) -> tensor<1x8xf32> {
  // expected-remark @+1 {{packed projection not split: a slice is not of the last dim, within it}}
  %p = loom.matmul %x, %w {transpose_rhs} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %r = loom.slice %p {dim = 0 : i64, start = 0 : i64, end = 1 : i64} : (tensor<3x8xf32>) -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// A weight read as it lies ([K, N]): not split.
// CHECK-LABEL: func.func @not_transposed(
// CHECK:         loom.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT:    loom.slice
func.func @not_transposed(%x: tensor<3x4xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  // expected-remark @+1 {{packed projection not split: the weight is not [N, K] read transposed}}
  %p = loom.matmul %x, %w : (tensor<3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  %k = loom.slice %p {dim = 1 : i64, start = 0 : i64, end = 4 : i64} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return %k : tensor<3x4xf32>
}
