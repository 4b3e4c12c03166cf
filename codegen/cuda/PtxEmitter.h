//===- PtxEmitter.h - GPU kernels to PTX through MLIR's NVVM ---*- C++ -*-===//
//
// A gpu.module of kernels in the gpu, scf, arith, math and llvm dialects
// becomes PTX for one NVIDIA architecture:
//
//   f32 math functions -> arith (codegen/common/MathExpansion.h: the polynomial
//   approximations the CPU's kernels use; pow as exp(y log x)); scf -> cf;
//   gpu -> nvvm; gpu-module-to-binary with #nvvm.target<chip>, LLVM's NVPTX
//   backend at -O3.
//
// f32 kernels call no function, so making their PTX needs no CUDA toolkit.
// f64 math functions stay libdevice calls (__nv_exp, ...): libdevice is
// linked where it is found (LOOM_CUDA_LIBDEVICE, where CMake found it
// beside nvcc; at run time also under $CUDA_HOME, $CUDA_PATH and
// /usr/local/cuda), and emitPtx names the function where it is not.
// assemblePtx runs the toolkit's ptxas (LOOM_PTXAS, looked for the same way
// and on PATH) on PTX: the cubin a CUDA executable carries beside its PTX.
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

/// The PTX of gpu.module `kernels` of `module` for `options.chip`; `module`
/// itself is left as it is. On failure `error` says why.
mlir::FailureOr<std::string> emitPtx(mlir::ModuleOp module,
                                     llvm::StringRef kernels,
                                     const PtxOptions &options,
                                     std::string &error);

/// The libdevice bitcode f64 math functions link, or "" where there is
/// none.
std::string libdevicePath();

/// The ptxas that assembles generated PTX, or "" where there is none.
std::string ptxasPath();

/// The cubin ptxas assembles from `ptx` for `chip` at -O3. On failure
/// `error` holds ptxas's own message (or why it could not run).
mlir::FailureOr<std::string>
assemblePtx(llvm::StringRef ptx, llvm::StringRef chip, std::string &error);

} // namespace loom::cuda

#endif // LOOM_CODEGEN_CUDA_PTXEMITTER_H
