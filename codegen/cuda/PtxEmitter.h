//===- PtxEmitter.h - GPU kernels to PTX through MLIR's NVVM ---*- C++ -*-===//
//
// A gpu.module of kernels in the gpu, scf, arith, math and llvm dialects
// becomes PTX for one NVIDIA architecture:
//
//   scf -> cf; gpu -> nvvm (math ops become libdevice calls: __nv_expf, ...);
//   gpu-module-to-binary with #nvvm.target<chip, link = [libdevice]>, which
//   links libdevice and runs LLVM's NVPTX backend at -O3.
//
// libdevice comes with the CUDA toolkit; CMake finds it next to nvcc
// (LOOM_CUDA_LIBDEVICE). Without it no PTX can be made, and emitPtx says so.
// assemblePtx runs the toolkit's ptxas (LOOM_PTXAS) on PTX: the cubin a
// CUDA executable carries beside its PTX.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_PTXEMITTER_H
#define LOOM_CODEGEN_CUDA_PTXEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace loom::cuda {

struct PtxOptions {
  /// The architecture: sm_80 (A100), sm_90 (H100), ...
  std::string chip = "sm_90";
  /// The PTX ISA version the code is written in: 8.1 (CUDA 12.1 and later),
  /// the first to let a kernel take more than 4 KiB of parameters (up to
  /// 32764 bytes): the optimizer's region of a `base` model passes some 400
  /// tensors, 10 KiB of addresses and dims.
  std::string features = "+ptx81";
};

/// The libdevice bitcode this build links, or "" when the build found no
/// CUDA toolkit.
std::string libdevicePath();

/// The PTX of gpu.module `kernels` of `module` for `options.chip`; `module`
/// itself is left as it is. On failure `error` says why.
mlir::FailureOr<std::string> emitPtx(mlir::ModuleOp module,
                                     llvm::StringRef kernels,
                                     const PtxOptions &options,
                                     std::string &error);

/// The ptxas this build found beside nvcc, or "" without a CUDA toolkit.
std::string ptxasPath();

/// The cubin ptxas assembles from `ptx` for `chip` at -O3. On failure
/// `error` holds ptxas's own message (or why it could not run).
mlir::FailureOr<std::string>
assemblePtx(llvm::StringRef ptx, llvm::StringRef chip, std::string &error);

} // namespace loom::cuda

#endif // LOOM_CODEGEN_CUDA_PTXEMITTER_H
