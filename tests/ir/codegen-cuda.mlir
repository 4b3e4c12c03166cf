// --loom-lower-regions-cuda replaces the module by the CUDA kernels of its
// loom.fusion regions: one gpu.func per region in gpu.module @loom_kernels,
// taking its operands' and results' pointers, then their dims, by value; an
// elementwise region is one grid-stride loop over the domain's elements
// (`loom.launch = "elements"`), a region with row reductions one block per
// row (`loom.launch = "rows"`, blocks of a multiple of 32 threads), a region
// with a reduction over every row one block (`loom.launch = "block"`).
// RUN: loom-opt %s --loom-lower-regions-cuda | FileCheck %s
// What loom-opt prints it parses back.
// RUN: loom-opt %s --loom-lower-regions-cuda | loom-opt > /dev/null
// The kernels become PTX through MLIR's NVVM target, and CUDA's assembler
// takes it for the A100 and the H100. f32 math functions are arithmetic
// (codegen/MathExpansion.h): the PTX calls nothing, not even libdevice.
// REQUIRES: cuda-codegen
// RUN: rm -rf %t && mkdir -p %t
// RUN: loom-opt %s '--loom-lower-regions-cuda=chip=sm_80 ptx-file=%t/sm_80.ptx' > /dev/null
// RUN: loom-opt %s '--loom-lower-regions-cuda=chip=sm_90 ptx-file=%t/sm_90.ptx' > /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t/sm_90.ptx
// RUN: %ptxas -arch=sm_80 %t/sm_80.ptx -o %t/sm_80.cubin
// RUN: %ptxas -arch=sm_90 %t/sm_90.ptx -o %t/sm_90.cubin
// RUN: not grep -E "call|\.extern" %t/sm_80.ptx %t/sm_90.ptx

// PTX: .target sm_90
// PTX-DAG: .visible .entry region_0(
// PTX-DAG: .visible .entry region_1(
// PTX-DAG: .visible .entry region_2(
// PTX-DAG: .visible .entry region_3(
// PTX-DAG: .visible .entry region_4(
// PTX-DAG: .visible .entry region_5(
// PTX-DAG: .visible .entry region_6(
// PTX-DAG: .visible .entry region_7(
// PTX-DAG: .visible .entry region_8(
// PTX-DAG: .visible .entry region_9(

// CHECK: gpu.module @loom_kernels
// CHECK-LABEL: gpu.func @region_0(%{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) kernel
// CHECK:         gpu.block_dim x
// CHECK:         gpu.block_id x
// CHECK:         gpu.thread_id x
// CHECK:         gpu.grid_dim x
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i64
// CHECK:           llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:           llvm.store %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         gpu.return
// The bias [1, C] broadcasts over rows: the same region kind, its own kernel.
func.func @axpy_bias(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %bias: tensor<1x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x, %y, %bias) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<1x?xf32>):
    %two = loom.constant dense<2.0> : tensor<f32>
    %m = loom.mul %a, %two : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    %s = loom.add %m, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %t = loom.add %s, %c : (tensor<?x?xf32>, tensor<1x?xf32>) -> tensor<?x?xf32>
    loom.yield %t : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// GELU's erf and the positional encoding's sin and cos stay math ops here;
// making PTX expands them into arithmetic.
// CHECK-LABEL: gpu.func @region_1(
// CHECK:         math.erf
// CHECK:         math.sin
// CHECK:         math.cos
// CHECK-NOT:     func.call
func.func @gelu_sin_cos(%x: tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %r:2 = loom.fusion(%x) : (tensor<8x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  ^bb0(%a: tensor<8x5xf32>):
    %g = loom.gelu %a : (tensor<8x5xf32>) -> tensor<8x5xf32>
    %s = loom.sin %a : (tensor<8x5xf32>) -> tensor<8x5xf32>
    %c = loom.cos %s : (tensor<8x5xf32>) -> tensor<8x5xf32>
    loom.yield %g, %c : tensor<8x5xf32>, tensor<8x5xf32>
  }
  return %r#0, %r#1 : tensor<8x5xf32>, tensor<8x5xf32>
}

// Dropout draws from the counter RNG the interpreter and the CPU use; the
// site's offset is a constant of the kernel, so two sites are two kernels.
// CHECK-LABEL: gpu.func @region_2(
// CHECK:         arith.constant 3 : i64
// CHECK-LABEL: gpu.func @region_3(
// CHECK:         arith.constant 4 : i64
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

// A padding mask: token ids compared with the pad id, selecting -1e9; i1
// results are bytes in memory.
// CHECK-LABEL: gpu.func @region_4(
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK:         arith.cmpi eq
// CHECK:         arith.select
// CHECK:         llvm.store %{{.*}} : i8, !llvm.ptr
func.func @mask(%ids: tensor<?x?xi32>, %scores: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xi1>) {
  %r:2 = loom.fusion(%ids, %scores) : (tensor<?x?xi32>, tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xi1>) {
  ^bb0(%i: tensor<?x?xi32>, %s: tensor<?x?xf32>):
    %pad = loom.constant dense<0> : tensor<i32>
    %isPad = loom.compare eq, %i, %pad : (tensor<?x?xi32>, tensor<i32>) -> tensor<?x?xi1>
    %neg = loom.constant dense<-1.0e9> : tensor<f32>
    %m = loom.select %isPad, %neg, %s : (tensor<?x?xi1>, tensor<f32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %m, %isPad : tensor<?x?xf32>, tensor<?x?xi1>
  }
  return %r#0, %r#1 : tensor<?x?xf32>, tensor<?x?xi1>
}

// Row-wise regions: one block per row (blocks stride over rows), threads
// stride over the row's columns; each row reduction is a warp butterfly of
// shuffles, then one slot per warp in shared memory that every thread folds
// in the same order. Softmax: the row max, the sum of exp(x - max), then the
// quotient, written in the last column loop.
// CHECK-LABEL: gpu.func @region_5(
// CHECK-SAME:    loom.launch = "rows"
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             arith.maximumf
// CHECK:           gpu.shuffle  xor
// CHECK:           gpu.barrier
// CHECK:           llvm.store {{.*}} !llvm.ptr<3>
// CHECK:           gpu.barrier
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             math.exp
// CHECK:             arith.addf
// CHECK:           gpu.shuffle  xor
// CHECK:           scf.for
// CHECK:             arith.divf
// CHECK:             llvm.store
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.softmax %a {axis = 1 : i64} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    loom.yield %s : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// Layer norm of a residual sum, with the row mean as a second result of
// shape [?, ?, 1]: a row value, written once per row by thread 0.
// CHECK-LABEL: gpu.func @region_6(
// CHECK-SAME:    loom.launch = "rows"
// CHECK:         math.sqrt
// CHECK:         scf.if
// CHECK:           llvm.store
// CHECK:         gpu.return
func.func @add_layer_norm(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x1xf32>) {
  %r:2 = loom.fusion(%x, %y, %gamma, %beta) : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x1xf32>) {
  ^bb0(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>, %g: tensor<8xf32>, %be: tensor<8xf32>):
    %s = loom.add %a, %b : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    %n = loom.layer_norm %s, %g, %be {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %mean = loom.reduce_mean %s [2] keep_dims : (tensor<?x?x8xf32>) -> tensor<?x?x1xf32>
    loom.yield %n, %mean : tensor<?x?x8xf32>, tensor<?x?x1xf32>
  }
  return %r#0, %r#1 : tensor<?x?x8xf32>, tensor<?x?x1xf32>
}

// Reductions over every row: stage s is one pass of a single block over
// the rows in order (`loom.launch = "block"`), its totals carried from row
// to row and known to the next stage. Centering by the mean of every
// element: a first pass sums the rows, a second writes x - mean.
// CHECK-LABEL: gpu.func @region_7(
// CHECK-SAME:    loom.launch = "block"
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           scf.for {{.*}} iter_args
// CHECK:           gpu.shuffle  xor
// CHECK:         arith.divf
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             arith.subf
// CHECK:             llvm.store
// CHECK:         gpu.return
func.func @center(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>):
    %m = loom.reduce_mean %a [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
    %d = loom.sub %a, %m : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
    loom.yield %d : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// A total alone: one pass, then thread 0 of block 0 writes it.
// CHECK-LABEL: gpu.func @region_8(
// CHECK-SAME:    loom.launch = "block"
// CHECK:         scf.for
// CHECK:         scf.if
// CHECK-NEXT:      llvm.store
func.func @total(%x: tensor<?x?xf32>) -> tensor<f32> {
  %r = loom.fusion(%x) : (tensor<?x?xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<?x?xf32>):
    %s = loom.reduce_sum %a [0, 1] : (tensor<?x?xf32>) -> tensor<f32>
    loom.yield %s : tensor<f32>
  }
  return %r : tensor<f32>
}

// bf16 tensors are read and written as bf16 and computed in f32, each op's
// result rounded to bf16 as the interpreter rounds it.
// CHECK-LABEL: gpu.func @region_9(
// CHECK:         llvm.load %{{.*}} -> bf16
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
func.func @ln16(%x: tensor<?x8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<?x8xbf16> {
  %r = loom.fusion(%x, %g, %b) : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16> {
  ^bb0(%a: tensor<?x8xbf16>, %gg: tensor<8xbf16>, %bb: tensor<8xbf16>):
    %n = loom.layer_norm %a, %gg, %bb {epsilon = 1.0e-5 : f64} : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
    loom.yield %n : tensor<?x8xbf16>
  }
  return %r : tensor<?x8xbf16>
}
