//===- ExecutableBuilder.h - Planned modules to executables -----*- C++ -*-===//
//
// The last step of `loom compile --target cpu|cuda`: a module that went
// through the whole compile pipeline (fused, planned) becomes an Executable.
// Every top-level value gets a buffer (parameters and optimizer state by
// name and shared by all entry points; inputs, outputs and temporaries per
// entry point; views of persistent buffers as offsets into them), every op a
// step: a loom.fusion calls its generated kernel, anything else a runtime
// library kernel, and views the memory plan already placed on their
// operand's bytes need no step at all. Shapes are polynomials in the named
// dynamic sizes (`batch`, `src_len`), which the runtime evaluates per call.
// Buffers are named for diagnostics and binding: parameters and optimizer
// state by their own names, the rest "<entry>/input/<name>",
// "<entry>/output/<name>" and "<entry>/%<n>".
//
// All of that is the same for every target; a KernelTarget supplies what is
// not: the generated kernels of the loom.fusion regions, how each is run,
// and the code (a CPU's shared object, a GPU's cubin).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_EXECUTABLEBUILDER_H
#define LOOM_CODEGEN_COMMON_EXECUTABLEBUILDER_H

#include "ir/LoomDialect.h"
#include "passes/SymbolicShapes.h"
#include "runtime/executable.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace loom {

struct ExecutableOptions {
  /// The bounds the module's memory was planned for.
  SizeBounds bounds;
  /// The TransformerConfig the module was built from, as protobuf text.
  std::string configText;
};

/// What one target's code generator does for the builder.
class KernelTarget {
public:
  virtual ~KernelTarget();
  /// The symbol of the kernel for `fusion` (regions that compute the same
  /// thing share one); on failure an error on `fusion` says why.
  virtual mlir::FailureOr<std::string> addRegion(FusionOp fusion) = 0;
  /// Fills the target's fields of the kernel record `kernel` made for a
  /// symbol addRegion returned (how the runtime launches it).
  virtual void describeKernel(runtime::Kernel &kernel) = 0;
  /// Once every entry point is written: sets the executable's target, its
  /// record of the target and `code`; on failure an error on `module`.
  virtual mlir::LogicalResult finish(mlir::ModuleOp module,
                                     runtime::Executable &exe) = 0;
};

/// The executable for `planned`, with `target`'s kernels; failure after an
/// error on the op or function that cannot be compiled.
mlir::FailureOr<runtime::Executable>
buildExecutable(mlir::ModuleOp planned, const ExecutableOptions &options,
                KernelTarget &target);

} // namespace loom

#endif // LOOM_CODEGEN_COMMON_EXECUTABLEBUILDER_H
