//===- GpuRegionLowering.h - A region graph as a GPU kernel -----*- C++ -*-===//
//
// The GPU counterpart of cpu/RegionLowering.h: a RegionGraph (built once for
// both targets by cpu/RegionGraph.h) becomes a gpu.func kernel
//
//   gpu.func @sym(%t0: !llvm.ptr, ..., %tN: !llvm.ptr,   // operands, results
//                 %d0: i64, ..., %dM: i64) kernel         // their dims
//
// with the same tensors and dims, in the same order, as the CPU kernel's
// `args` and `dims` arrays, passed by value so that a launch (and a CUDA
// graph node) carries everything the kernel reads.
//
// Elementwise regions (no row or full reductions) are one grid-stride loop
// over the elements of the iteration domain: each thread computes whole
// elements, reading each operand at the element's broadcast offset, so
// neighbouring threads touch neighbouring columns (coalesced). A result that
// shares storage with an operand of its shape is safe: every element is read
// before it is written, by the same thread. Regions with reductions are
// declined with a message naming the reduction (row-wise kernels, one block
// per row with warp reductions, are the next step).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H
#define LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H

#include "codegen/cpu/RegionGraph.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace loom::cuda {

/// Whether `graph` can be a GPU kernel yet; otherwise why not.
mlir::LogicalResult canEmitGpuKernel(const cpu::RegionGraph &graph,
                                     std::string &why);

/// Adds the kernel of `graph` to `kernels` as `symbol` (canEmitGpuKernel
/// must hold). `module` is the module that holds `kernels`.
void emitGpuKernel(const cpu::RegionGraph &graph, mlir::ModuleOp module,
                   mlir::gpu::GPUModuleOp kernels, llvm::StringRef symbol);

} // namespace loom::cuda

#endif // LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H
