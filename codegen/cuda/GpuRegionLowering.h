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
// How a kernel is launched is recorded on it as `loom.launch`, and the
// threads of its blocks as `known_block_size` (blockThreads):
//
//   elements  no reductions: one grid-stride loop over the domain's
//             elements, any grid and block; each thread reads an element's
//             operands before it writes its results, so a result may share
//             storage with an operand of its shape.
//   rows      row reductions: blocks stride over rows, threads over a
//             row's columns once per phase; a reduction is a warp butterfly
//             of shuffles, then one shared slot per warp folded by every
//             thread in the same order. Blocks of a multiple of 32 threads.
//   block     reductions over every row: ONE block takes every row in
//             order, once per stage, carrying the totals; a later stage
//             reads the totals of earlier ones. Launched with a grid of 1.
//
// Results broadcast over rows (the CPU writes them from the last row only,
// since they may overwrite an operand other rows read) are declined.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H
#define LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H

#include "codegen/common/RegionGraph.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace loom::cuda {

/// The attribute that records a kernel's launch shape, and its values.
constexpr llvm::StringLiteral kLaunchAttr = "loom.launch";
constexpr llvm::StringLiteral kLaunchElements = "elements";
constexpr llvm::StringLiteral kLaunchRows = "rows";
constexpr llvm::StringLiteral kLaunchBlock = "block";

/// The threads per block a kernel of `graph` with launch shape `launch` is
/// compiled for (gpu.func's known_block_size, PTX's .maxntid).
int32_t blockThreads(const codegen::RegionGraph &graph, llvm::StringRef launch);

/// The most bytes of parameters a kernel launch carries (PTX ISA 8.1).
constexpr int64_t kMaxParameterBytes = 32764;

/// Whether `graph` can be a GPU kernel yet; otherwise why not.
mlir::LogicalResult canEmitGpuKernel(const codegen::RegionGraph &graph,
                                     std::string &why);

/// Adds the kernel of `graph` to `kernels` as `symbol` (canEmitGpuKernel
/// must hold). `module` is the module that holds `kernels`.
void emitGpuKernel(const codegen::RegionGraph &graph, mlir::ModuleOp module,
                   mlir::gpu::GPUModuleOp kernels, llvm::StringRef symbol);

} // namespace loom::cuda

#endif // LOOM_CODEGEN_CUDA_GPUREGIONLOWERING_H
