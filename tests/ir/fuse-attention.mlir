// loom-fuse-attention rewrites softmax(q k^T * s + masks) v, as the frontend
// and PyTorch's ONNX export write it, into loom.attention.
// RUN: loom-opt %s --loom-fuse-attention -split-input-file | FileCheck %s
// RUN: loom-opt %s --pass-pipeline='builtin.module(func.func(loom-fuse-attention{remarks=true}))' -split-input-file -verify-diagnostics -o /dev/null

// The base model as `loom compile` builds it, before any pass: every
// attention of @loss fuses (6 encoder layers, 2 x 6 decoder layers), with
// nothing declined.
// RUN: rm -rf %t && loom compile --preset base -o /dev/null --dump-dir %t
// RUN: loom-opt %t/00-input.mlir --pass-pipeline='builtin.module(func.func(loom-fuse-attention{remarks=true}))' 2>&1 | FileCheck %s --check-prefix=BASE
// BASE-NOT: remark
// BASE-LABEL: func.func @loss(
// BASE-COUNT-18: loom.attention
// BASE-NOT: loom.softmax
// BASE-NOT: loom.attention
// BASE-LABEL: func.func @token_log_probs(

// The frontend's form: scores scaled by a constant, the decoder's
// `padding + causal` mask (shared by two layers), dropout of the
// probabilities. The causal addend becomes the flag, the padding mask the
// mask operand, and the shared sum dies with its last reader.
// CHECK-LABEL: func.func @frontend
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{[^,]*}}, %[[K:[a-z0-9]+]]: {{[^,]*}}, %[[V:[a-z0-9]+]]: {{[^,]*}}, %[[IDS:[a-z0-9]+]]: {{[^,]*}}, %[[SEED:[a-z0-9]+]]: tensor<i64>)
// CHECK: %[[PAD:.*]] = loom.padding_mask %[[IDS]]
// CHECK-NOT: loom.causal_mask
// CHECK: %[[O1:.*]], %{{.*}} = loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[PAD]] : tensor<?x1x1x?xf32>) seed(%[[SEED]] : tensor<i64>) {causal, dropout_offset = 3 : i64, dropout_rate = 1.000000e-01 : f64, scale = 2.500000e-01 : f64} : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x2x?x16xf32>, tensor<?x2x?xf32>
// CHECK: %[[O2:.*]], %{{.*}} = loom.attention %[[O1]], %[[K]], %[[V]] mask(%[[PAD]] : tensor<?x1x1x?xf32>) seed(%[[SEED]] : tensor<i64>) {causal, dropout_offset = 4 : i64, dropout_rate = 1.000000e-01 : f64, scale = 2.500000e-01 : f64}
// CHECK-NOT: loom.softmax
// CHECK-NOT: loom.matmul
// CHECK-NOT: loom.add
// CHECK: return %[[O2]]
func.func @frontend(%q: tensor<?x2x?x16xf32>, %k: tensor<?x2x?x16xf32>, %v: tensor<?x2x?x16xf32>,
                    %ids: tensor<?x?xi32>, %seed: tensor<i64>) -> tensor<?x2x?x16xf32> {
  %pad = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %causal = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  %mask = loom.add %pad, %causal : (tensor<?x1x1x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %c = loom.constant dense<2.500000e-01> : tensor<f32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x?xf32>
  %t = loom.mul %s, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = loom.add %t, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = loom.softmax %m {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d = loom.dropout %p, %seed {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o = loom.matmul %d, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  // The second layer reads the same mask.
  %s2 = loom.matmul %o, %k {transpose_rhs} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x?xf32>
  %t2 = loom.mul %s2, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m2 = loom.add %t2, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p2 = loom.softmax %m2 {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d2 = loom.dropout %p2, %seed {rate = 0.1 : f64, offset = 4 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o2 = loom.matmul %d2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  return %o2 : tensor<?x2x?x16xf32>
}

// -----

// PyTorch's ONNX export: an explicit transpose of k, division by sqrt(d_k),
// and masks added one by one. Two masks remain and are summed before the
// fused op; the causal one becomes the flag. The head split and merge
// around the chain stay as they are.
// CHECK-LABEL: func.func @onnx_export
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{[^,]*}}, %[[K:[a-z0-9]+]]: {{[^,]*}}, %[[V:[a-z0-9]+]]: {{[^,]*}}, %[[M1:[a-z0-9]+]]: {{[^,]*}}, %[[M2:[a-z0-9]+]]: {{[^,]*}}, %[[IDS:[a-z0-9]+]]: tensor<1x6xi32>)
// CHECK: %[[Q:.*]] = loom.transpose
// CHECK: %[[MASK:.*]] = loom.add %[[M1]], %[[M2]] : (tensor<1x1x1x6xf32>, tensor<6x6xf32>) -> tensor<1x1x6x6xf32>
// CHECK: %[[O:.*]], %{{.*}} = loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[MASK]] : tensor<1x1x6x6xf32>) {causal, scale = 1.250000e-01 : f64} : tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32>, tensor<1x4x6x64xf32> -> tensor<1x4x6x64xf32>, tensor<1x4x6xf32>
// CHECK: loom.transpose %[[O]] [0, 2, 1, 3]
// CHECK-NOT: loom.causal_mask
// CHECK-NOT: loom.div
// CHECK-NOT: loom.softmax
func.func @onnx_export(%x: tensor<1x6x4x64xf32>, %k: tensor<1x4x6x64xf32>, %v: tensor<1x4x6x64xf32>,
                       %m1: tensor<1x1x1x6xf32>, %m2: tensor<6x6xf32>, %ids: tensor<1x6xi32>) -> tensor<1x6x4x64xf32> {
  %q = loom.transpose %x [0, 2, 1, 3] : (tensor<1x6x4x64xf32>) -> tensor<1x4x6x64xf32>
  %kt = loom.transpose %k [0, 1, 3, 2] : (tensor<1x4x6x64xf32>) -> tensor<1x4x64x6xf32>
  %s = loom.matmul %q, %kt : (tensor<1x4x6x64xf32>, tensor<1x4x64x6xf32>) -> tensor<1x4x6x6xf32>
  %c = loom.constant dense<8.0> : tensor<f32>
  %t = loom.div %s, %c : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  %a1 = loom.add %t, %m1 : (tensor<1x4x6x6xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x6x6xf32>
  %causal = loom.causal_mask %ids {dim = 1 : i64} : tensor<1x6xi32> -> tensor<6x6xf32>
  %a2 = loom.add %a1, %causal : (tensor<1x4x6x6xf32>, tensor<6x6xf32>) -> tensor<1x4x6x6xf32>
  %a3 = loom.add %m2, %a2 : (tensor<6x6xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %p = loom.softmax %a3 {axis = 3 : i64} : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %o = loom.matmul %p, %v : (tensor<1x4x6x6xf32>, tensor<1x4x6x64xf32>) -> tensor<1x4x6x64xf32>
  %merged = loom.transpose %o [0, 2, 1, 3] : (tensor<1x4x6x64xf32>) -> tensor<1x6x4x64xf32>
  return %merged : tensor<1x6x4x64xf32>
}

// -----

// q scaled before the product (and a constant on the left of the mul);
// cross-attention with Sq != Sk and no mask.
// CHECK-LABEL: func.func @q_scaled
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{[^,]*}}, %[[K:[a-z0-9]+]]: {{[^,]*}}, %[[V:[a-z0-9]+]]: {{[^)]*}})
// CHECK-NEXT: %[[O:.*]], %{{.*}} = loom.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64} : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x4xf32> -> tensor<2x3x4xf32>, tensor<2x3xf32>
// CHECK-NEXT: return %[[O]]
func.func @q_scaled(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x4xf32>) -> tensor<2x3x4xf32> {
  %c = loom.constant dense<0.5> : tensor<f32>
  %qs = loom.mul %c, %q : (tensor<f32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %s = loom.matmul %qs, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %p = loom.softmax %s {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = loom.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// masked_fill(scores, !allowed, -1e9), as a hand-written PyTorch attention
// exports it (Where on the scores): the fill becomes the additive mask
// select(allowed, 0, -1e9); the scores may be either operand.
// CHECK-LABEL: func.func @masked_fill
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{[^,]*}}, %[[K:[a-z0-9]+]]: {{[^,]*}}, %[[V:[a-z0-9]+]]: {{[^,]*}}, %[[A:[a-z0-9]+]]: {{[^)]*}})
// CHECK-DAG: %[[FILL:.*]] = loom.constant dense<-1.000000e+09> : tensor<f32>
// CHECK-DAG: %[[ZERO:.*]] = loom.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[M:.*]] = loom.select %[[A]], %[[ZERO]], %[[FILL]] : (tensor<3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]] : tensor<3x5xf32>) {scale = 5.000000e-01 : f64}
// CHECK-NOT: loom.softmax
// CHECK: %[[NOT:.*]] = loom.select %[[A]], %[[FILL]], %{{[a-z0-9_]+}} : (tensor<3x5xi1>, tensor<f32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK-NEXT: loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[NOT]] : tensor<3x5xf32>)
func.func @masked_fill(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x4xf32>,
                       %allowed: tensor<3x5xi1>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %c = loom.constant dense<0.5> : tensor<f32>
  %fill = loom.constant dense<-1.0e9> : tensor<f32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %t = loom.mul %s, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %m = loom.select %allowed, %t, %fill : (tensor<3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = loom.softmax %m {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = loom.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  // The scores on the false side: masked where %allowed is true.
  %s1 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %m1 = loom.select %allowed, %fill, %s1 : (tensor<3x5xi1>, tensor<f32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %p1 = loom.softmax %m1 {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o1 = loom.matmul %p1, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o, %o1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// A select that is not a masked_fill keeps the chain: the fill -1 changes
// what softmax gives the selected scores, and a fill read from a tensor
// is not known to mask.
// CHECK-LABEL: func.func @not_masked_fill
// CHECK-NOT: loom.attention
// CHECK-COUNT-2: loom.softmax
// CHECK-NOT: loom.attention
func.func @not_masked_fill(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x4xf32>,
                           %allowed: tensor<3x5xi1>, %w: tensor<f32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %fill = loom.constant dense<-1.0> : tensor<f32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %m = loom.select %allowed, %s, %fill : (tensor<3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  // expected-remark @+1 {{not fused: the scores are not q k^T}}
  %p = loom.softmax %m {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = loom.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  %s1 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %m1 = loom.select %allowed, %s1, %w : (tensor<3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  // expected-remark @+1 {{not fused: the scores are not q k^T}}
  %p1 = loom.softmax %m1 {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o1 = loom.matmul %p1, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o, %o1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Without dropout, the probabilities may have readers besides the matmul
// with v (a decoder step returning its alignment): the chain still fuses,
// and the readers get exp(scores - lse) from the fused op's statistic.
// The scores chain stays for them; the softmax goes.
// CHECK-LABEL: func.func @weights_read
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{[^,]*}}, %[[K:[a-z0-9]+]]: {{[^,]*}}, %[[V:[a-z0-9]+]]: {{[^,]*}}, %[[MASK:[a-z0-9]+]]: {{[^)]*}})
// CHECK: %[[S:.*]] = loom.matmul %[[Q]], %[[K]] {transpose_rhs}
// CHECK: %[[T:.*]] = loom.mul %[[S]]
// CHECK: %[[M:.*]] = loom.add %[[T]], %[[MASK]]
// CHECK: %[[O:.*]], %[[LSE:.*]] = loom.attention %[[Q]], %[[K]], %[[V]] mask(%[[MASK]] : tensor<2x1x5xf32>) {scale = 5.000000e-01 : f64} : {{.*}} -> tensor<2x3x4xf32>, tensor<2x3xf32>
// CHECK: %[[ROW:.*]] = loom.expand_dims %[[LSE]] [2] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK: %[[D:.*]] = loom.sub %[[M]], %[[ROW]]
// CHECK: %[[W:.*]] = loom.exp %[[D]]
// CHECK-NOT: loom.softmax
// CHECK: %[[MEAN:.*]] = loom.reduce_mean %[[W]]
// CHECK: return %[[O]], %[[MEAN]], %[[W]]
func.func @weights_read(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x4xf32>,
                        %mask: tensor<2x1x5xf32>) -> (tensor<2x3x4xf32>, tensor<2x5xf32>, tensor<2x3x5xf32>) {
  %c = loom.constant dense<0.5> : tensor<f32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>) -> tensor<2x3x5xf32>
  %t = loom.mul %s, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %m = loom.add %t, %mask : (tensor<2x3x5xf32>, tensor<2x1x5xf32>) -> tensor<2x3x5xf32>
  %p = loom.softmax %m {axis = 2 : i64} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %o = loom.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  %mean = loom.reduce_mean %p [1] : (tensor<2x3x5xf32>) -> tensor<2x5xf32>
  return %o, %mean, %p : tensor<2x3x4xf32>, tensor<2x5xf32>, tensor<2x3x5xf32>
}

// -----

// Declined candidates stay as they are, each with its reason.
// CHECK-LABEL: func.func @declined
// CHECK-NOT: loom.attention
// CHECK-COUNT-8: loom.softmax
// CHECK-NOT: loom.attention
func.func @declined(%q: tensor<2x3x8xf32>, %k: tensor<2x3x8xf32>, %v: tensor<2x3x8xf32>,
                    %w: tensor<2x3x3xf32>, %kt: tensor<2x8x3xf32>, %seed: tensor<i64>)
    -> (tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>,
        tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>,
        tensor<2x3x3xf32>) {
  %c = loom.constant dense<0.5> : tensor<f32>
  // The scores are also returned.
  %s0 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %t0 = loom.mul %s0, %c : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: the scores have another use}}
  %p0 = loom.softmax %t0 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o0 = loom.matmul %p0, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  // Softmax over the queries.
  %s1 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: softmax is not over the last axis}}
  %p1 = loom.softmax %s1 {axis = 1 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o1 = loom.matmul %p1, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  // Scaled by a tensor, not a constant.
  %s2 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  %t2 = loom.mul %s2, %w : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: the scale is not a scalar constant}}
  %p2 = loom.softmax %t2 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o2 = loom.matmul %p2, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  // The probabilities are returned, not multiplied with v.
  %s3 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: no matmul with v follows}}
  %p3 = loom.softmax %s3 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>

  // The dropped-out probabilities have a second reader.
  %s4 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: the dropped-out probabilities have another use}}
  %p4 = loom.softmax %s4 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %d4 = loom.dropout %p4, %seed {rate = 0.1 : f64, offset = 1 : i64} : (tensor<2x3x3xf32>, tensor<i64>) -> tensor<2x3x3xf32>
  %o4 = loom.matmul %d4, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  // Not a product of q and k^T: the keys come pre-transposed, not from a
  // transpose of k.
  %s5 = loom.matmul %q, %kt : (tensor<2x3x8xf32>, tensor<2x8x3xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: the scores are not q k^T}}
  %p5 = loom.softmax %s5 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o5 = loom.matmul %p5, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>

  // v on the left of the product.
  %s6 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: no matmul with v follows}}
  %p6 = loom.softmax %s6 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o6 = loom.matmul %w, %p6 : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>

  // The probabilities are dropped out and also read as they are: the
  // weights cannot be rebuilt for a training graph's backward.
  %s7 = loom.matmul %q, %k {transpose_rhs} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x3xf32>
  // expected-remark @+1 {{not fused: the probabilities have another use beside dropout}}
  %p7 = loom.softmax %s7 {axis = 2 : i64} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %d7 = loom.dropout %p7, %seed {rate = 0.1 : f64, offset = 2 : i64} : (tensor<2x3x3xf32>, tensor<i64>) -> tensor<2x3x3xf32>
  %o7 = loom.matmul %d7, %v : (tensor<2x3x3xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %o0, %t0, %o1, %o2, %p3, %o4, %d4, %o5, %o6, %o7, %p7
      : tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>,
        tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>, tensor<2x3x3xf32>, tensor<2x3x8xf32>,
        tensor<2x3x3xf32>
}
