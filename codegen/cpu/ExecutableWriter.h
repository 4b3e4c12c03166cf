//===- ExecutableWriter.h - Planned modules to CPU executables --*- C++ -*-===//
//
// `loom compile --target cpu`: the executable of a planned module
// (codegen/common/ExecutableBuilder.h) whose generated kernels are native code
// for one CPU, linked into one shared object (cpu/RegionCodegen.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H
#define LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H

#include "codegen/common/ExecutableBuilder.h"

namespace loom {

struct CpuExecutableOptions : ExecutableOptions {
  /// The CPU the code is for: "native" (this machine) or a portable level
  /// ("x86-64-v3") of abi/CpuFeatures.h. Recorded in the executable, whose
  /// loader refuses it on a CPU that lacks one of the target's features.
  std::string cpu = "native";
  /// Recorded as CpuTarget.linear_precision: "fp32", "int8" or "bf16".
  std::string linearPrecision = "fp32";
};

/// The executable for `planned`; failure after an error on the op or
/// function that cannot be compiled.
mlir::FailureOr<runtime::Executable>
writeCpuExecutable(mlir::ModuleOp planned, const CpuExecutableOptions &options);

} // namespace loom

#endif // LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H
