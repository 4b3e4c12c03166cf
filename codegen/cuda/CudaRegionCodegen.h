//===- CudaRegionCodegen.h - loom.fusion regions to GPU kernels -*- C++ -*-===//
//
// The CUDA counterpart of cpu/RegionCodegen.h: every loom.fusion region
// becomes one kernel of a gpu.module (GpuRegionLowering.h says its ABI),
// and the module becomes PTX per architecture (PtxEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_CUDAREGIONCODEGEN_H
#define LOOM_CODEGEN_CUDA_CUDAREGIONCODEGEN_H

#include "codegen/cuda/PtxEmitter.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>

namespace loom::cuda {

/// The name of the gpu.module that holds an executable's kernels.
constexpr llvm::StringLiteral kKernelModule = "loom_kernels";

class CudaRegionCodegen {
public:
  explicit CudaRegionCodegen(mlir::MLIRContext *context);

  /// Adds the kernel for `fusion` (regions that compute the same thing,
  /// with the same types, share one) and returns its symbol; on failure an
  /// error on `fusion` says why it cannot be a GPU kernel.
  mlir::FailureOr<std::string> addRegion(FusionOp fusion);

  /// How kernel `symbol` (one addRegion returned) is launched: its shape
  /// (kLaunchElements, kLaunchRows, kLaunchBlock) and threads per block.
  std::pair<std::string, int32_t> launchOf(llvm::StringRef symbol);

  /// The module holding gpu.module @loom_kernels, for dumps and tests.
  mlir::ModuleOp module() { return *holder; }

  /// PTX of every kernel added so far.
  mlir::FailureOr<std::string> emitPtx(const PtxOptions &options,
                                       std::string &error) {
    return cuda::emitPtx(*holder, kKernelModule, options, error);
  }

private:
  mlir::OwningOpRef<mlir::ModuleOp> holder;
  std::map<std::string, std::string> symbols; // structural key -> symbol
};

} // namespace loom::cuda

#endif // LOOM_CODEGEN_CUDA_CUDAREGIONCODEGEN_H
