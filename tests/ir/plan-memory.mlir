// loom-plan-memory gives every temporary an offset in one arena, sized at the
// bounds of the named dims: here batch x len <= 64 tokens, so a
// [batch, len, 32] f32 value takes 64 * 32 * 4 = 8192 bytes.
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-plan-memory="max-tokens=64 max-len=16 max-batch=8" | FileCheck %s
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-plan-memory | loom-opt --split-input-file > /dev/null

// Live ranges (steps 0-6), by hand:
//   a, c (c in place over a)  8192 B  [0, 3]
//   b                          256 B  [1, 2]
//   d, d2 (d2 a view of d)    4096 B  [3, 5]
//   e                         8192 B  [5, 6]
// Largest first: a/c at 0; e at 0 too, since a/c is dead by step 5; d is
// live beside both, so 8192; b beside a/c, 8192 as well. The arena is 12288
// bytes, as many as are live at step 3 (a/c and d). Naive: every result
// except the view and the output, 8192 + 256 + 8192 + 4096 + 8192 = 28928.
// Persistent: w1, w2 (2048 each), x (64 x 16 x 4 = 4096) and y (4096).

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: loom.arena_bytes = 12288 : i64
// CHECK-SAME: loom.live_lower_bound_bytes = 12288 : i64
// CHECK-SAME: loom.naive_bytes = 28928 : i64
// CHECK-SAME: loom.persistent_bytes = 12288 : i64
func.func @mlp(%w1: tensor<32x16xf32> {loom.param = "w1"},
               %w2: tensor<16x32xf32> {loom.param = "w2"},
               %x: tensor<?x?x16xf32> {loom.input = "x", loom.dims = ["batch", "len", ""]})
    -> (tensor<?x16xf32> {loom.output = "y"}) {
  // CHECK: loom.matmul {{.*}}loom.offsets = array<i64: 0>
  %a = loom.matmul %x, %w1 {transpose_rhs} : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  // CHECK: loom.reduce_sum {{.*}}loom.offsets = array<i64: 8192>
  %b = loom.reduce_sum %a [2] keep_dims : (tensor<?x?x32xf32>) -> tensor<?x?x1xf32>
  // The subtraction is the last to read a: it writes over it.
  // CHECK: loom.sub {{.*}}loom.offsets = array<i64: 0>
  %c = loom.sub %a, %b : (tensor<?x?x32xf32>, tensor<?x?x1xf32>) -> tensor<?x?x32xf32>
  // CHECK: loom.matmul {{.*}}loom.offsets = array<i64: 8192>
  %d = loom.matmul %c, %w2 {transpose_rhs} : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  // A reshape is a view: the bytes of d.
  // CHECK: loom.reshape {{.*}}loom.offsets = array<i64: 8192>
  %d2 = loom.reshape %d [-1, 16] : (tensor<?x?x16xf32>) -> tensor<?x16xf32>
  // A dead buffer is reused: a/c's bytes.
  // CHECK: loom.matmul {{.*}}loom.offsets = array<i64: 0>
  %e = loom.matmul %d2, %w1 {transpose_rhs} : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  // An output is persistent: no offset.
  // CHECK: loom.matmul
  // CHECK-NOT: loom.offsets
  // CHECK: return
  %y = loom.matmul %e, %w2 {transpose_rhs} : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// An output named like an input is written over it: no copy, no arena.
// CHECK-LABEL: func.func @update
// CHECK-SAME: loom.arena_bytes = 0 : i64
// CHECK-SAME: loom.persistent_bytes = 128 : i64
// CHECK-NOT: loom.offsets
func.func @update(%w: tensor<4xf32> {loom.param = "w"}, %g: tensor<4xf32> {loom.input = "g"})
    -> (tensor<4xf32> {loom.output = "param.w"}) {
  %0 = loom.sub %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A cast writes in place only over elements of its own width. A batch of 8
// rows of 2 takes 64 bytes in f32 or i32, and in bf16 32 padded to 64: the
// same size, but an f32 element would land on the next bf16 one unread.
// The bf16 temporary is counted among the narrow copies (64 of the 256
// naive bytes).
// CHECK-LABEL: func.func @casts
// CHECK-SAME: loom.arena_bytes = 128 : i64
// CHECK-SAME: loom.narrow_copy_bytes = 64 : i64
func.func @casts(%x: tensor<?x2xf32> {loom.dims = ["batch", ""]}) -> tensor<?x2xf32> {
  // CHECK: loom.exp {{.*}}loom.offsets = array<i64: 0>
  %e = loom.exp %x : (tensor<?x2xf32>) -> tensor<?x2xf32>
  // f32 to i32: in place.
  // CHECK: loom.cast {{.*}}loom.offsets = array<i64: 0>
  %i = loom.cast %e : tensor<?x2xf32> to tensor<?x2xi32>
  // CHECK: loom.cast {{.*}}loom.offsets = array<i64: 64>
  %h = loom.cast %i : tensor<?x2xi32> to tensor<?x2xbf16>
  // bf16 to f32: not over the bf16 values; the dead i32 bytes instead.
  // CHECK: loom.cast {{.*}}loom.offsets = array<i64: 0>
  %f = loom.cast %h : tensor<?x2xbf16> to tensor<?x2xf32>
  %y = loom.neg %f : (tensor<?x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// A decode cache grows in place by one position. The old cache holds
// batch x cache_len <= 64 positions of 2 x 4 floats (2048 bytes), the new
// row batch <= 8 of them (256), and the grown cache batch x cache_len + batch
// <= 72 (2304): 256 bytes more than the old, not a second cache.
// CHECK-LABEL: func.func @append
// CHECK-SAME: loom.persistent_bytes = 2560 : i64
func.func @append(%k: tensor<?x2x?x4xf32> {loom.input = "self_k.0", loom.dims = ["batch", "", "cache_len", ""]},
                  %new: tensor<?x2x1x4xf32> {loom.input = "new", loom.dims = ["batch", "", "", ""]})
    -> (tensor<?x2x?x4xf32> {loom.output = "self_k.0"}) {
  %0 = loom.concat %k, %new {dim = 2 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x1x4xf32>) -> tensor<?x2x?x4xf32>
  return %0 : tensor<?x2x?x4xf32>
}

// -----

// expected-error @below {{dim 0 of argument #0 of @unnamed ('tensor<?x4xf32>') is dynamic but has no name in loom.dims}}
func.func @unnamed(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = loom.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @unbounded(%x: tensor<?x2xf32> {loom.dims = ["batch", ""]}) -> tensor<?x3xf32> {
  // expected-error @below {{cannot bound dim 0 of %0 ('tensor<?x3xf32>')}}
  %0 = loom.reshape %x [-1, 3] : (tensor<?x2xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @late_read(%w: tensor<4xf32> {loom.param = "w"}, %g: tensor<4xf32> {loom.input = "g"})
    -> (tensor<4xf32> {loom.output = "param.w"}, tensor<4xf32> {loom.output = "wg"}) {
  // expected-note @below {{the output is written here}}
  %0 = loom.sub %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @below {{output "param.w" of @late_read is written over its input, but this op reads the input after the op that writes it}}
  %1 = loom.mul %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
