// --loom-lower-regions-cpu replaces the module by the CPU kernels of its
// loom.fusion regions, in the LLVM dialect: one C-callable function per
// region, `void(void *const *args, const int64_t *dims, int64_t rowBegin,
// int64_t rowEnd)`, with a loop over rows and, per row, a loop of whole
// vectors (the host's width) and a loop over the remaining columns.
// RUN: loom-opt %s --loom-lower-regions-cpu | FileCheck %s
// What loom-opt prints it parses back.
// RUN: loom-opt %s --loom-lower-regions-cpu | loom-opt > /dev/null

// The libc functions that scratch buffers use.
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @free(!llvm.ptr)

// 2 * x + y: pointers and sizes from the two arrays, the row loop ends at
// the domain's last row even when asked for more, then vectors, then
// scalars; `contract` lets LLVM fuse the multiply-add.
// CHECK-LABEL: llvm.func @loom_region_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64) {
// CHECK:         llvm.intr.smin
// CHECK:         llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<[[N:[0-9]+]]xf32>
// CHECK:         llvm.fmul %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<[[N]]xf32>
// CHECK:         llvm.fadd %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<[[N]]xf32>
// CHECK:         llvm.store %{{.*}} {alignment = 4 : i64} : vector<[[N]]xf32>, !llvm.ptr
// CHECK:         llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         llvm.store %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         llvm.return
func.func @axpy(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>):
    %c = loom.constant dense<2.0> : tensor<f32>
    %m = loom.mul %a, %c : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %s = loom.add %m, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// Softmax: a row maximum (NaN-propagating), then exp(x - max) inline (a
// polynomial, no libm call) summed and kept in a scratch row, then the
// quotient. The same region again shares the kernel.
// CHECK-LABEL: llvm.func @loom_region_1(
// CHECK:         llvm.call @malloc
// CHECK:         llvm.intr.maximum({{.*}}) : (vector<[[N]]xf32>, vector<[[N]]xf32>) -> vector<[[N]]xf32>
// CHECK:         llvm.intr.vector.reduce.fmaximum
// CHECK-NOT:     llvm.call @expf
// CHECK:         llvm.intr.fma
// CHECK:         llvm.intr.vector.reduce.fadd
// CHECK:         llvm.fdiv
// CHECK:         llvm.call @free
// CHECK:         llvm.return
// CHECK-NOT:   llvm.func @loom_region_2(
func.func @softmax(%x: tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %r = loom.fusion(%x) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  ^bb0(%a: tensor<?x?x?xf32>):
    %p = loom.softmax %a {axis = 2 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    loom.yield %p : tensor<?x?x?xf32>
  }
  %q = loom.fusion(%r) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  ^bb0(%a: tensor<?x?x?xf32>):
    %p = loom.softmax %a {axis = 2 : i64} : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    loom.yield %p : tensor<?x?x?xf32>
  }
  return %r, %q : tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

// Two dropout sites that differ only in their offsets: one body, which takes
// the offsets as a fifth argument, and an entry point per site.
// CHECK-LABEL: llvm.func @loom_body_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr) attributes {no_inline} {
// CHECK:         llvm.lshr %{{.*}} : vector<[[N]]xi64>
// CHECK:       llvm.mlir.global internal constant @loom_region_2_offsets(dense<3> : tensor<1xi64>)
// CHECK-LABEL: llvm.func @loom_region_2(
// CHECK:         llvm.mlir.addressof @loom_region_2_offsets
// CHECK:         llvm.call @loom_body_0(
// CHECK:       llvm.mlir.global internal constant @loom_region_3_offsets(dense<4> : tensor<1xi64>)
// CHECK-LABEL: llvm.func @loom_region_3(
// CHECK:         llvm.mlir.addressof @loom_region_3_offsets
// CHECK:         llvm.call @loom_body_0(
func.func @dropout(%x: tensor<?x64xf32>, %seed: tensor<i64>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %r = loom.fusion(%x, %seed) : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %s: tensor<i64>):
    %d = loom.dropout %a, %s {rate = 0.1 : f64, offset = 3 : i64} : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32>
    loom.yield %d : tensor<?x64xf32>
  }
  %q = loom.fusion(%x, %seed) : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32> {
  ^bb0(%a: tensor<?x64xf32>, %s: tensor<i64>):
    %d = loom.dropout %a, %s {rate = 0.1 : f64, offset = 4 : i64} : (tensor<?x64xf32>, tensor<i64>) -> tensor<?x64xf32>
    loom.yield %d : tensor<?x64xf32>
  }
  return %r, %q : tensor<?x64xf32>, tensor<?x64xf32>
}
