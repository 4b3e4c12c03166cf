// loom-cache-precision holds a decoder's attention caches in bf16: @encode
// returns its cross caches cast to bf16, the decode steps take every cache
// in bf16, round each new position before it is appended, and attention
// reads the bf16 keys and values with f32 queries. Every cache or none.
// RUN: loom-opt %s --split-input-file --loom-cache-precision | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-cache-precision=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: not loom-opt %s --split-input-file --loom-cache-precision=precision=f8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: loom-cache-precision: unknown precision 'f8' (bf16)

// CHECK-LABEL: func.func @encode(
// CHECK-SAME:    -> (tensor<?x2x?x8xbf16> {loom.output = "cross_k.0"}, tensor<?x2x?x8xbf16> {loom.output = "cross_v.0"})
// CHECK:         %[[K16:.*]] = loom.cast %{{.*}} : tensor<?x2x?x8xf32> to tensor<?x2x?x8xbf16>
// CHECK-NEXT:    %[[V16:.*]] = loom.cast %{{.*}} : tensor<?x2x?x8xf32> to tensor<?x2x?x8xbf16>
// CHECK-NEXT:    return %[[K16]], %[[V16]]
func.func @encode(%k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>)
    -> (tensor<?x2x?x8xf32> {loom.output = "cross_k.0"},
        tensor<?x2x?x8xf32> {loom.output = "cross_v.0"}) {
  %k2 = loom.neg %k : (tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %v2 = loom.neg %v : (tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  return %k2, %v2 : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// The self caches' new position is rounded right after it is made; the
// concat appends in bf16 and is returned as the grown bf16 cache. The
// queries, the mask, the outputs and the logits stay f32.
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME:    %[[CK:[a-z0-9]+]]: tensor<?x2x?x8xbf16> {loom.input = "cross_k.0"}, %[[CV:[a-z0-9]+]]: tensor<?x2x?x8xbf16> {loom.input = "cross_v.0"}
// CHECK-SAME:    %[[SK:[a-z0-9]+]]: tensor<?x?x2x8xbf16> {loom.input = "self_k.0"}, %[[SV:[a-z0-9]+]]: tensor<?x?x2x8xbf16> {loom.input = "self_v.0"}
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<?x2x1x8xf32>
// CHECK-SAME:    -> (tensor<?x2x1x8xf32> {loom.output = "logits"}, tensor<?x?x2x8xbf16> {loom.output = "self_k.0"}, tensor<?x?x2x8xbf16> {loom.output = "self_v.0"})
// CHECK:         %[[NK:.*]] = loom.expand_dims
// CHECK-NEXT:    %[[NK16:.*]] = loom.cast %[[NK]] : tensor<1x?x2x8xf32> to tensor<1x?x2x8xbf16>
// CHECK:         %[[NV:.*]] = loom.expand_dims
// CHECK-NEXT:    %[[NV16:.*]] = loom.cast %[[NV]] : tensor<1x?x2x8xf32> to tensor<1x?x2x8xbf16>
// CHECK:         %[[K:.*]] = loom.concat %[[SK]], %[[NK16]] {dim = 0 : i64} : (tensor<?x?x2x8xbf16>, tensor<1x?x2x8xbf16>) -> tensor<?x?x2x8xbf16>
// CHECK:         %[[V:.*]] = loom.concat %[[SV]], %[[NV16]] {dim = 0 : i64} : (tensor<?x?x2x8xbf16>, tensor<1x?x2x8xbf16>) -> tensor<?x?x2x8xbf16>
// CHECK:         loom.attention %[[Q]], %[[K]], %[[V]] {keys_position_major, scale = {{.*}}} : tensor<?x2x1x8xf32>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
// CHECK:         loom.attention %{{.*}}, %[[CK]], %[[CV]] {scale = {{.*}}} : tensor<?x2x1x8xf32>, tensor<?x2x?x8xbf16>, tensor<?x2x?x8xbf16> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
// CHECK:         return %{{.*}}, %[[K]], %[[V]] : tensor<?x2x1x8xf32>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
func.func @decode_step(%ck: tensor<?x2x?x8xf32> {loom.input = "cross_k.0"},
                       %cv: tensor<?x2x?x8xf32> {loom.input = "cross_v.0"},
                       %sk: tensor<?x?x2x8xf32> {loom.input = "self_k.0"},
                       %sv: tensor<?x?x2x8xf32> {loom.input = "self_v.0"},
                       %q: tensor<?x2x1x8xf32>, %x: tensor<?x2x8xf32>)
    -> (tensor<?x2x1x8xf32> {loom.output = "logits"},
        tensor<?x?x2x8xf32> {loom.output = "self_k.0"},
        tensor<?x?x2x8xf32> {loom.output = "self_v.0"}) {
  %nk = loom.expand_dims %x [0] : (tensor<?x2x8xf32>) -> tensor<1x?x2x8xf32>
  %xv = loom.neg %x : (tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  %nv = loom.expand_dims %xv [0] : (tensor<?x2x8xf32>) -> tensor<1x?x2x8xf32>
  %k = loom.concat %sk, %nk {dim = 0 : i64} : (tensor<?x?x2x8xf32>, tensor<1x?x2x8xf32>) -> tensor<?x?x2x8xf32>
  %v = loom.concat %sv, %nv {dim = 0 : i64} : (tensor<?x?x2x8xf32>, tensor<1x?x2x8xf32>) -> tensor<?x?x2x8xf32>
  %o, %l = loom.attention %q, %k, %v {keys_position_major, scale = 0.35 : f64} : tensor<?x2x1x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
  %o2, %l2 = loom.attention %o, %ck, %cv {scale = 0.35 : f64} : tensor<?x2x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
  return %o2, %k, %v : tensor<?x2x1x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
}

// @decode_step_align rebuilds its cross-attention weights from scores it
// computes beside the fused op: that matmul reads the narrowed cross keys
// cast back to f32, and the caches are narrowed all the same.
// CHECK-LABEL: func.func @decode_step_align(
// CHECK-SAME:    %[[CK:[a-z0-9]+]]: tensor<?x2x?x8xbf16> {loom.input = "cross_k.0"}, %[[CV:[a-z0-9]+]]: tensor<?x2x?x8xbf16> {loom.input = "cross_v.0"}
// CHECK:         loom.attention %[[Q:.*]], %[[CK]], %[[CV]]
// CHECK:         %[[WIDE:.*]] = loom.cast %[[CK]] : tensor<?x2x?x8xbf16> to tensor<?x2x?x8xf32>
// CHECK-NEXT:    loom.matmul %[[Q]], %[[WIDE]] {transpose_rhs}
func.func @decode_step_align(%ck: tensor<?x2x?x8xf32> {loom.input = "cross_k.0"},
                             %cv: tensor<?x2x?x8xf32> {loom.input = "cross_v.0"},
                             %q: tensor<?x2x1x8xf32>)
    -> (tensor<?x2x1x8xf32> {loom.output = "logits"},
        tensor<?x2x1x?xf32> {loom.output = "alignment.0"}) {
  %o, %l = loom.attention %q, %ck, %cv {scale = 0.35 : f64} : tensor<?x2x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
  %s = loom.matmul %q, %ck {transpose_rhs} : (tensor<?x2x1x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x1x?xf32>
  return %o, %s : tensor<?x2x1x8xf32>, tensor<?x2x1x?xf32>
}

// A training entry point is not a decoder's: untouched.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT:     bf16
func.func @loss(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32> {loom.input = "cross_k.0"})
    -> tensor<2x3x8xf32> {
  %o, %l = loom.attention %q, %k, %k {scale = 0.35 : f64} : tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x3x8xf32>, tensor<2x3xf32>
  return %o : tensor<2x3x8xf32>
}

// -----

// CUDA's layout: the self cache is transposed before attention reads it (its
// kernel reads f32 keys [..., T, D]), so no cache is narrowed, not even the
// cross caches @encode returns (the drivers give every cache one type).
// REMARK: remark: the decoder's caches stay f32: input 'self_k.0' with a position appended is read by loom.transpose, which is not attention's keys
// CHECK-LABEL: func.func @encode(
// CHECK-SAME:    -> (tensor<?x2x?x8xf32> {loom.output = "cross_k.0"})
// CHECK-NOT:     loom.cast
// CHECK-LABEL: func.func @decode_step(
// CHECK-NOT:     bf16
func.func @encode(%k: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32> {loom.output = "cross_k.0"}) {
  return %k : tensor<?x2x?x8xf32>
}
func.func @decode_step(%sk: tensor<?x?x2x8xf32> {loom.input = "self_k.0"},
                       %q: tensor<?x2x1x8xf32>, %x: tensor<?x2x8xf32>)
    -> (tensor<?x2x1x8xf32> {loom.output = "logits"},
        tensor<?x?x2x8xf32> {loom.output = "self_k.0"}) {
  %nk = loom.expand_dims %x [0] : (tensor<?x2x8xf32>) -> tensor<1x?x2x8xf32>
  %k = loom.concat %sk, %nk {dim = 0 : i64} : (tensor<?x?x2x8xf32>, tensor<1x?x2x8xf32>) -> tensor<?x?x2x8xf32>
  %kt = loom.transpose %k [1, 2, 0, 3] : (tensor<?x?x2x8xf32>) -> tensor<?x2x?x8xf32>
  %o, %l = loom.attention %q, %kt, %kt {scale = 0.35 : f64} : tensor<?x2x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
  return %o, %k : tensor<?x2x1x8xf32>, tensor<?x?x2x8xf32>
}

// -----

// A cache read as keys with f32 values from elsewhere: attention cannot
// take k and v of two types.
// REMARK: remark: the decoder's caches stay f32: it reads a cache as keys and another tensor as values
// CHECK-LABEL: func.func @decode_step(
// CHECK-NOT:     bf16
func.func @decode_step(%ck: tensor<?x2x?x8xf32> {loom.input = "cross_k.0"},
                       %q: tensor<?x2x1x8xf32>, %v: tensor<?x2x?x8xf32>)
    -> tensor<?x2x1x8xf32> {
  %o, %l = loom.attention %q, %ck, %v {scale = 0.35 : f64} : tensor<?x2x1x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32> -> tensor<?x2x1x8xf32>, tensor<?x2x1xf32>
  return %o : tensor<?x2x1x8xf32>
}

// -----

// Caches that are not f32 (already narrow) are left as they are.
// REMARK: remark: the decoder's caches stay f32: input 'cross_k.0' is not f32
// CHECK-LABEL: func.func @decode_step(
// CHECK-SAME:    tensor<?x2x?x8xf16> {loom.input = "cross_k.0"}
func.func @decode_step(%ck: tensor<?x2x?x8xf16> {loom.input = "cross_k.0"},
                       %q: tensor<?x2x1x8xf16>)
    -> tensor<?x2x1x8xf16> {
  %o, %l = loom.attention %q, %ck, %ck {scale = 0.35 : f64} : tensor<?x2x1x8xf16>, tensor<?x2x?x8xf16>, tensor<?x2x?x8xf16> -> tensor<?x2x1x8xf16>, tensor<?x2x1xf16>
  return %o : tensor<?x2x1x8xf16>
}
