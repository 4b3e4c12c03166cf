//===- ObjectEmitter.h - LLVM IR to a CPU shared object ---------*- C++ -*-===//
//
// The back end of CPU codegen: an LLVM module is optimized at -O3 for a
// target, emitted as an ELF object in memory, and linked into a shared
// object by the system linker (`ld -shared`, else `cc -shared`). Symbols the
// object uses but does not define (malloc, libm) stay undefined: the process
// that loads the shared object provides them.
//
// The target is chosen by a level (`loom compile --cpu`, abi/CpuFeatures.h):
// "native" is the machine the compiler runs on, its CPU name and every
// feature it has, so its full vector width; a portable level ("x86-64-v3")
// is LLVM's CPU of that name with nothing added, whose code runs on every
// CPU of the level. The executable records the target's features so that a
// machine without one refuses the code instead of dying of SIGILL.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_OBJECTEMITTER_H
#define LOOM_CODEGEN_CPU_OBJECTEMITTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace loom::cpu {

/// What code is generated for.
struct CodegenTarget {
  /// What was asked for: "native" or a portable level ("x86-64-v3").
  std::string level;
  std::string triple;
  /// LLVM's CPU name: the host's ("znver3") or the level's ("x86-64-v3").
  std::string cpu;
  /// LLVM's feature string on top of the CPU's own features: every feature
  /// the host has or lacks for "native", empty for a portable level.
  std::string features;
  /// The widest vector registers the target has (128, 256 or 512): the
  /// vector width of the generated kernels.
  unsigned vectorBits = 128;
  /// Kernels call the C library for sin, cos and pow. Tests turn it off to
  /// check, on the CPU, the arithmetic GPU kernels compute them with
  /// (codegen/common/MathExpansion.h).
  bool libm = true;
};

/// The target for `level` ("native" or a portable level of
/// abi/CpuFeatures.h); fails naming the accepted levels for any other.
llvm::Expected<CodegenTarget> codegenTarget(llvm::StringRef level);

/// The machine the compiler runs on: codegenTarget("native"), queried once.
const CodegenTarget &hostTarget();

/// The features of abi/CpuFeatures.h that LLVM enables for `target` (its
/// CPU's, its feature string's, and what they imply), sorted: what the
/// generated code may use and a machine must have to run it.
llvm::Expected<std::vector<std::string>>
enabledCpuFeatures(const CodegenTarget &target);

/// Optimizes `module` at -O3 for `target` and returns the ELF object. Sets
/// the module's triple and data layout.
llvm::Expected<std::string> emitObject(llvm::Module &module,
                                       const CodegenTarget &target);

/// Links ELF objects into one shared object; returns its bytes. Fails with
/// the linker's output when no linker is found or linking fails.
llvm::Expected<std::string>
linkSharedObject(llvm::ArrayRef<std::string> objects);

} // namespace loom::cpu

#endif // LOOM_CODEGEN_CPU_OBJECTEMITTER_H
