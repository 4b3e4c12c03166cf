//===- ExecutableWriter.h - Planned modules to CPU executables --*- C++ -*-===//
//
// The last step of `loom compile --target cpu`: a module that went through
// the whole compile pipeline (fused, planned) becomes an Executable. Every
// top-level value gets a buffer (parameters and optimizer state by name and
// shared by all entry points; inputs, outputs and temporaries per entry
// point; views of persistent buffers as offsets into them), every op a step:
// a loom.fusion calls its generated kernel, anything else a runtime library
// kernel, and views the memory plan already placed on their operand's bytes
// need no step at all. Shapes are polynomials in the named dynamic sizes
// (`batch`, `src_len`), which the runtime evaluates per call. Buffers are
// named for diagnostics and binding: parameters and optimizer state by their
// own names, the rest "<entry>/input/<name>", "<entry>/output/<name>" and
// "<entry>/%<n>".
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H
#define LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H

#include "passes/SymbolicShapes.h"
#include "runtime/executable.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace loom {

struct CpuExecutableOptions {
  /// The bounds the module's memory was planned for.
  SizeBounds bounds;
  /// The TransformerConfig the module was built from, as protobuf text.
  std::string configText;
  /// The CPU the code is for: "native" (this machine) or a portable level
  /// ("x86-64-v3") of abi/CpuFeatures.h. Recorded in the executable, whose
  /// loader refuses it on a CPU that lacks one of the target's features.
  std::string cpu = "native";
};

/// The executable for `planned`; failure after an error on the op or
/// function that cannot be compiled.
mlir::FailureOr<runtime::Executable>
writeCpuExecutable(mlir::ModuleOp planned, const CpuExecutableOptions &options);

} // namespace loom

#endif // LOOM_CODEGEN_CPU_EXECUTABLEWRITER_H
