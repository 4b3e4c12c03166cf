// f64 regions on the GPU: reductions shuffle 64-bit values, and f64 math
// functions (the expansions are for f32) are libdevice calls, linked from
// the CUDA toolkit where it has libdevice.
// REQUIRES: cuda-codegen, libdevice
// RUN: loom-opt %s --loom-lower-regions-cuda | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: loom-opt %s '--loom-lower-regions-cuda=chip=sm_90 ptx-file=%t/sm_90.ptx' > /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/sm_90.ptx
// RUN: %ptxas -arch=sm_90 %t/sm_90.ptx -o %t/sm_90.cubin

// CHECK-LABEL: gpu.func @region_0(
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         gpu.shuffle  xor %{{.*}} : f64
// libdevice's exp is linked and inlined: nothing is left to call.
// PTX: .visible .entry region_0(
// PTX-NOT: call
func.func @softmax64(%x: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %r = loom.fusion(%x) : (tensor<?x?xf64>) -> tensor<?x?xf64> {
  ^bb0(%a: tensor<?x?xf64>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf64>) -> tensor<?x?xf64>
    loom.yield %s : tensor<?x?xf64>
  }
  return %r : tensor<?x?xf64>
}
