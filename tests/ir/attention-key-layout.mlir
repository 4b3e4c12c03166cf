// loom-attention-key-layout lets loom.attention read keys and values held
// position first ([T, ..., D], a decoder cache) instead of their transposed
// copy; with remarks=true each attention with a transposed k or v that it
// leaves alone says why.
// RUN: loom-opt %s --loom-attention-key-layout | FileCheck %s
// RUN: loom-opt %s --loom-attention-key-layout=remarks=true --verify-diagnostics -o /dev/null

// A decoder step's self-attention: the caches [T, N, K, H, D] are read
// where they lie, and the transposes go.
// CHECK-LABEL: func.func @decoder_cache(
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<?x?x2x1x16xf32>, %[[K:[a-z0-9]+]]: tensor<?x?x?x2x16xf32>, %[[V:[a-z0-9]+]]: tensor<?x?x?x2x16xf32>)
// CHECK-NOT:     loom.transpose
// CHECK:         loom.attention %[[Q]], %[[K]], %[[V]] {keys_position_major, scale = 2.500000e-01 : f64} : tensor<?x?x2x1x16xf32>, tensor<?x?x?x2x16xf32>, tensor<?x?x?x2x16xf32>
func.func @decoder_cache(%q: tensor<?x?x2x1x16xf32>, %k: tensor<?x?x?x2x16xf32>,
                         %v: tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 3, 0, 4] : (tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x?x16xf32>
  %vt = loom.transpose %v [1, 2, 3, 0, 4] : (tensor<?x?x?x2x16xf32>) -> tensor<?x?x2x?x16xf32>
  %o, %lse = loom.attention %q, %kt, %vt {scale = 0.25 : f64} : tensor<?x?x2x1x16xf32>, tensor<?x?x2x?x16xf32>, tensor<?x?x2x?x16xf32> -> tensor<?x?x2x1x16xf32>, tensor<?x?x2x1xf32>
  return %o : tensor<?x?x2x1x16xf32>
}

// A transpose that something else reads stays for that reader.
// CHECK-LABEL: func.func @transpose_kept(
// CHECK:         %[[KT:.*]] = loom.transpose
// CHECK:         loom.attention %{{.*}}, %{{.*}}, %{{.*}} {keys_position_major
// CHECK:         return %{{.*}}, %[[KT]]
func.func @transpose_kept(%q: tensor<3x2x1x16xf32>, %k: tensor<5x3x2x16xf32>,
                          %v: tensor<5x3x2x16xf32>) -> (tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>) {
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %vt = loom.transpose %v [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %o, %lse = loom.attention %q, %kt, %vt {scale = 0.25 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o, %kt : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>
}

// Only k is a position-first transpose: not rewritten.
// CHECK-LABEL: func.func @only_k(
// CHECK:         loom.transpose
// CHECK-NOT:     keys_position_major
func.func @only_k(%q: tensor<3x2x1x16xf32>, %k: tensor<5x3x2x16xf32>,
                  %v: tensor<3x2x5x16xf32>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  // expected-remark @+1 {{keys read through a transpose: k and v are not both [T, ..., D] moved to [..., T, D]}}
  %o, %lse = loom.attention %q, %kt, %v {scale = 0.25 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}

// Another permutation (the heads and the batch swapped as well): not
// rewritten.
// CHECK-LABEL: func.func @other_permutation(
// CHECK-NOT:     keys_position_major
func.func @other_permutation(%q: tensor<3x2x1x16xf32>, %k: tensor<5x2x3x16xf32>,
                             %v: tensor<5x2x3x16xf32>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [2, 1, 0, 3] : (tensor<5x2x3x16xf32>) -> tensor<3x2x5x16xf32>
  %vt = loom.transpose %v [2, 1, 0, 3] : (tensor<5x2x3x16xf32>) -> tensor<3x2x5x16xf32>
  // expected-remark @+1 {{keys read through a transpose: k and v are not both [T, ..., D] moved to [..., T, D]}}
  %o, %lse = loom.attention %q, %kt, %vt {scale = 0.25 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}

// With dropout (training): not rewritten.
// CHECK-LABEL: func.func @dropout(
// CHECK-NOT:     keys_position_major
func.func @dropout(%q: tensor<3x2x1x16xf32>, %k: tensor<5x3x2x16xf32>,
                   %v: tensor<5x3x2x16xf32>, %seed: tensor<i64>) -> tensor<3x2x1x16xf32> {
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  %vt = loom.transpose %v [1, 2, 0, 3] : (tensor<5x3x2x16xf32>) -> tensor<3x2x5x16xf32>
  // expected-remark @+1 {{keys read through a transpose: dropout (position-first keys are for inference)}}
  %o, %lse = loom.attention %q, %kt, %vt seed(%seed : tensor<i64>) {scale = 0.25 : f64, dropout_rate = 0.1 : f64} : tensor<3x2x1x16xf32>, tensor<3x2x5x16xf32>, tensor<3x2x5x16xf32> -> tensor<3x2x1x16xf32>, tensor<3x2x1xf32>
  return %o : tensor<3x2x1x16xf32>
}
