//===- ObjectEmitter.h - LLVM IR to a host shared object --------*- C++ -*-===//
//
// The back end of CPU codegen: an LLVM module is optimized at -O3 for the
// machine the compiler runs on (its CPU name and features, so its full
// vector width), emitted as an ELF object in memory, and linked into a
// shared object by the system linker (`ld -shared`, else `cc -shared`).
// Symbols the object uses but does not define (malloc, libm) stay undefined:
// the process that loads the shared object provides them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_OBJECTEMITTER_H
#define LOOM_CODEGEN_CPU_OBJECTEMITTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace loom::cpu {

/// What code is generated for: the host.
struct HostTarget {
  std::string triple;
  std::string cpu;
  std::string features;
  /// The widest vector registers the features allow (128, 256 or 512).
  unsigned vectorBits = 128;
};

/// The host, queried once.
const HostTarget &hostTarget();

/// Optimizes `module` at -O3 for the host and returns the ELF object. Sets
/// the module's triple and data layout.
llvm::Expected<std::string> emitObject(llvm::Module &module);

/// Links ELF objects into one shared object; returns its bytes. Fails with
/// the linker's output when no linker is found or linking fails.
llvm::Expected<std::string>
linkSharedObject(llvm::ArrayRef<std::string> objects);

} // namespace loom::cpu

#endif // LOOM_CODEGEN_CPU_OBJECTEMITTER_H
