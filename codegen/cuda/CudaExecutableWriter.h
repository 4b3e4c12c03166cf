//===- CudaExecutableWriter.h - Modules to CUDA executables -----*- C++ -*-===//
//
// `loom compile --target cuda`: the executable of a planned module
// (codegen/common/ExecutableBuilder.h) whose generated kernels are GPU kernels
// (GpuRegionLowering.h), assembled by ptxas into a cubin for one
// architecture, with their PTX kept beside it for the driver to compile on
// a newer GPU. Buffers, steps and library calls are the CPU executable's:
// the same plan runs on either device.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CUDA_CUDAEXECUTABLEWRITER_H
#define LOOM_CODEGEN_CUDA_CUDAEXECUTABLEWRITER_H

#include "codegen/common/ExecutableBuilder.h"

namespace loom {

struct CudaExecutableOptions : ExecutableOptions {
  /// The GPU architecture of the cubin: sm_80 (A100), sm_90 (H100), ...
  std::string arch = "sm_90";
};

/// Whether `arch` is an architecture the CUDA target compiles for.
bool isCudaArch(llvm::StringRef arch);
/// The architectures isCudaArch takes, for messages.
std::string cudaArchList();

/// The executable for `planned`; failure after an error on the op or
/// function that cannot be compiled (a region no GPU kernel is made for),
/// or on the module when PTX or the cubin cannot be made.
mlir::FailureOr<runtime::Executable>
writeCudaExecutable(mlir::ModuleOp planned,
                    const CudaExecutableOptions &options);

} // namespace loom

#endif // LOOM_CODEGEN_CUDA_CUDAEXECUTABLEWRITER_H
