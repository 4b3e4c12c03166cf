// loom-mixed-precision rounds the factors of every product in the training
// entry points to bf16, once per value, and keeps the sums, results and
// everything else in f32.
// RUN: loom-opt %s --loom-mixed-precision | FileCheck %s
// RUN: loom-opt %s --loom-mixed-precision=entries=decode_step | FileCheck %s --check-prefix=ENTRIES
// RUN: loom-opt %s --loom-mixed-precision=entries=packed | FileCheck %s --check-prefix=PACKED
// RUN: not loom-opt %s --loom-mixed-precision=precision=f8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// A linear and its two gradient products: the weight is rounded once (at the
// entry) and read by both of its products; x is rounded once, and dW's
// product over the flattened rows views x's cast (the f32 views, now unused,
// go). Bias and residual stay f32.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x8xf32>, %[[W:[a-z0-9]+]]: tensor<4x8xf32>, %[[B:[a-z0-9]+]]: tensor<4xf32>, %[[R:[a-z0-9]+]]: tensor<2x3x4xf32>, %[[G:[a-z0-9]+]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[X16:.*]] = loom.cast %[[X]] : tensor<2x3x8xf32> to tensor<2x3x8xbf16>
// CHECK-NEXT:    %[[W16:.*]] = loom.cast %[[W]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT:    %[[G16:.*]] = loom.cast %[[G]] : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
// CHECK-NEXT:    %[[Y:.*]] = loom.linear %[[X16]], %[[W16]] bias(%[[B]] : tensor<4xf32>) residual(%[[R]] : tensor<2x3x4xf32>) : tensor<2x3x8xbf16>, tensor<4x8xbf16> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = loom.matmul %[[G16]], %[[W16]] : (tensor<2x3x4xbf16>, tensor<4x8xbf16>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[G2_16:.*]] = loom.reshape %[[G16]] [-1, 4] : (tensor<2x3x4xbf16>) -> tensor<6x4xbf16>
// CHECK-NEXT:    %[[X2_16:.*]] = loom.reshape %[[X16]] [-1, 8] : (tensor<2x3x8xbf16>) -> tensor<6x8xbf16>
// CHECK-NEXT:    %[[DW:.*]] = loom.matmul %[[G2_16]], %[[X2_16]] {transpose_lhs} : (tensor<6x4xbf16>, tensor<6x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT:    return %[[Y]], %[[DX]], %[[DW]]
func.func @train_step(%x: tensor<2x3x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>,
                      %r: tensor<2x3x4xf32>, %g: tensor<2x3x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<4x8xf32>) {
  %y = loom.linear %x, %w bias(%b : tensor<4xf32>) residual(%r : tensor<2x3x4xf32>) : tensor<2x3x8xf32>, tensor<4x8xf32> -> tensor<2x3x4xf32>
  %dx = loom.matmul %g, %w : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
  %g2 = loom.reshape %g [-1, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %x2 = loom.reshape %x [-1, 8] : (tensor<2x3x8xf32>) -> tensor<6x8xf32>
  %dw = loom.matmul %g2, %x2 {transpose_lhs} : (tensor<6x4xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  return %y, %dx, %dw : tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<4x8xf32>
}

// A value made inside the function is rounded right after the op that made
// it, where elementwise fusion can fold the cast into that op's kernel.
// CHECK-LABEL: func.func @loss(
// CHECK:         %[[H:.*]] = loom.relu
// CHECK-NEXT:    %[[H16:.*]] = loom.cast %[[H]] : tensor<5x8xf32> to tensor<5x8xbf16>
// CHECK-NEXT:    %[[E:.*]] = loom.exp %[[H]]
// CHECK:         loom.linear %[[H16]]
func.func @loss(%x: tensor<5x8xf32>, %w: tensor<4x8xf32>) -> (tensor<5x4xf32>, tensor<5x8xf32>) {
  %h = loom.relu %x : (tensor<5x8xf32>) -> tensor<5x8xf32>
  %e = loom.exp %h : (tensor<5x8xf32>) -> tensor<5x8xf32>
  %y = loom.linear %h, %w : tensor<5x8xf32>, tensor<4x8xf32> -> tensor<5x4xf32>
  return %y, %e : tensor<5x4xf32>, tensor<5x8xf32>
}

// Not fired: factors already bf16, f64 factors, and attention (no
// ProductOpInterface yet: its CPU kernel reads f32).
// CHECK-LABEL: func.func @loss_grad(
// CHECK-NOT:     loom.cast
// CHECK:         return
func.func @loss_grad(%a: tensor<3x8xbf16>, %w: tensor<4x8xbf16>, %c: tensor<3x8xf64>,
                     %d: tensor<8x2xf64>, %q: tensor<2x5x8xf32>)
    -> (tensor<3x4xf32>, tensor<3x2xf64>, tensor<2x5x8xf32>) {
  %y = loom.matmul %a, %w {transpose_rhs} : (tensor<3x8xbf16>, tensor<4x8xbf16>) -> tensor<3x4xf32>
  %z = loom.matmul %c, %d : (tensor<3x8xf64>, tensor<8x2xf64>) -> tensor<3x2xf64>
  %o, %lse = loom.attention %q, %q, %q {scale = 0.25 : f64} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x5x8xf32>, tensor<2x5xf32>
  return %y, %z, %o : tensor<3x4xf32>, tensor<3x2xf64>, tensor<2x5x8xf32>
}

// Not fired: decoding entry points (a translator rounds its weights once per
// session, when it packs them), unless named in `entries`.
// CHECK-LABEL: func.func @decode_step(
// CHECK-NOT:     loom.cast
// ENTRIES-LABEL: func.func @train_step(
// ENTRIES-NOT:   loom.cast
// ENTRIES-LABEL: func.func @decode_step(
// ENTRIES:       loom.cast %{{.*}} : tensor<1x8xf32> to tensor<1x8xbf16>
func.func @decode_step(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>) -> tensor<1x4xf32> {
  %y = loom.linear %x, %w : tensor<1x8xf32>, tensor<4x8xf32> -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// BAD: loom-mixed-precision: unknown precision 'f8' (bf16)

// A transpose (MovesElements) of a value made in the step, read only by
// products, moves its source's cast: the cast joins the source's kernel and
// the transpose copies bf16, and the f32 transpose goes. Not a transpose
// that something else reads in f32 (a second, f32 move would stay), nor a
// slice of a parameter (the memory plan places a packed projection's rows on
// the parameter, free, so each slice is rounded itself).
// PACKED-LABEL: func.func @packed(
// PACKED-SAME:    %[[Z:[a-z0-9]+]]: tensor<8x5xf32>, %[[W:[a-z0-9]+]]: tensor<8x8xf32>
// PACKED-NEXT:    %[[H:.*]] = loom.relu %[[Z]]
// PACKED-NEXT:    %[[H16:.*]] = loom.cast %[[H]] : tensor<8x5xf32> to tensor<8x5xbf16>
// PACKED-NEXT:    %[[T16:.*]] = loom.transpose %[[H16]] [1, 0] : (tensor<8x5xbf16>) -> tensor<5x8xbf16>
// PACKED-NEXT:    %[[G:.*]] = loom.exp %[[Z]]
// PACKED-NEXT:    %[[U:.*]] = loom.transpose %[[G]] [1, 0] : (tensor<8x5xf32>) -> tensor<5x8xf32>
// PACKED-NEXT:    %[[U16:.*]] = loom.cast %[[U]] : tensor<5x8xf32> to tensor<5x8xbf16>
// PACKED-NEXT:    %[[WQ:.*]] = loom.slice %[[W]] {dim = 0 : i64, end = 4 : i64, start = 0 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
// PACKED-NEXT:    %[[WQ16:.*]] = loom.cast %[[WQ]] : tensor<4x8xf32> to tensor<4x8xbf16>
// PACKED-NEXT:    %[[WK:.*]] = loom.slice %[[W]] {dim = 0 : i64, end = 8 : i64, start = 4 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
// PACKED-NEXT:    %[[WK16:.*]] = loom.cast %[[WK]] : tensor<4x8xf32> to tensor<4x8xbf16>
// PACKED-NEXT:    loom.linear %[[T16]], %[[WQ16]] : tensor<5x8xbf16>, tensor<4x8xbf16> -> tensor<5x4xf32>
// PACKED-NEXT:    loom.linear %[[U16]], %[[WK16]] : tensor<5x8xbf16>, tensor<4x8xbf16> -> tensor<5x4xf32>
// PACKED-NEXT:    return %{{.*}}, %{{.*}}, %[[U]]
func.func @packed(%z: tensor<8x5xf32>, %w: tensor<8x8xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x8xf32>) {
  %h = loom.relu %z : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %t = loom.transpose %h [1, 0] : (tensor<8x5xf32>) -> tensor<5x8xf32>
  %g = loom.exp %z : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %u = loom.transpose %g [1, 0] : (tensor<8x5xf32>) -> tensor<5x8xf32>
  %wq = loom.slice %w {dim = 0 : i64, start = 0 : i64, end = 4 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %wk = loom.slice %w {dim = 0 : i64, start = 4 : i64, end = 8 : i64} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %q = loom.linear %t, %wq : tensor<5x8xf32>, tensor<4x8xf32> -> tensor<5x4xf32>
  %k = loom.linear %u, %wk : tensor<5x8xf32>, tensor<4x8xf32> -> tensor<5x4xf32>
  return %q, %k, %u : tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x8xf32>
}
