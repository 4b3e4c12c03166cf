//===- CompileDriver.h - From a model to an executable ----------*- C++ -*-===//
//
// The compiler as a library: build a model from its config (or take a
// module built with the C++ API), run the compile pipeline for the bounds
// of the batches it will see, and write the executable for a CPU or a GPU.
// `loom`'s commands, `loom prepare` and programs built against an installed
// Loom (examples/custom_model) call it; the tools add only flags and
// output. Failures are llvm::Error, the compiler's error type; MLIR's
// diagnostics go to stderr with their locations (printDiagnostics).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DRIVER_COMPILEDRIVER_H
#define LOOM_DRIVER_COMPILEDRIVER_H

#include "frontend/Config.h"
#include "passes/Pipeline.h"
#include "passes/SymbolicShapes.h"
#include "runtime/Device.h"
#include "runtime/Executable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace loom::driver {

/// Prints every diagnostic of `ctx` (remarks included) to stderr with its
/// location, while alive.
std::unique_ptr<mlir::ScopedDiagnosticHandler>
printDiagnostics(mlir::MLIRContext &ctx);

/// The pipeline options for `config` planned for batches within the bounds.
CompilePipelineOptions pipelineFor(const TransformerConfig &config,
                                   int64_t maxTokens, int64_t maxLen,
                                   int64_t maxBatch);

/// What an executable's code is for: a CPU (a level of abi/CpuFeatures.h,
/// "native" for this machine) or, with `cudaArch` set, a GPU architecture.
struct CodeTarget {
  std::string cpu = "native";
  std::string cudaArch; // "sm_90"
  /// What decoding's linear layers multiply in on the CPU: "fp32", "int8",
  /// "bf16" (CpuTarget.linear_precision).
  std::string precision = "fp32";
  /// What the decoder's attention caches are held in on the CPU: "fp32",
  /// "bf16", or "" for what `precision` implies (bf16 with bf16, else fp32).
  std::string cachePrecision;
  bool cuda() const { return !cudaArch.empty(); }
  /// The caches' precision, "" resolved.
  std::string cachesIn() const {
    if (!cachePrecision.empty())
      return cachePrecision;
    return !cuda() && precision == "bf16" ? "bf16" : "fp32";
  }
  /// "native", "x86-64-v3", "sm_90".
  std::string name() const { return cuda() ? cudaArch : cpu; }
};

/// The target whose code runs natively on `device`: this CPU, or the GPU's
/// architecture (the newest the compiler knows, whose PTX the driver
/// compiles, for a GPU newer than all of them).
CodeTarget codeTargetOf(const runtime::Device &device);

/// The executable of `planned` (a module the compile pipeline ran on,
/// planned for `bounds`) for `target`; `config` is what it was built from.
llvm::Expected<runtime::Executable>
writeExecutable(mlir::ModuleOp planned, const TransformerConfig &config,
                const SizeBounds &bounds, const CodeTarget &target);
/// The same for a module that no config describes (an imported model, one
/// built with the C++ API): `configText` is what the executable records of
/// its source ("" for none).
llvm::Expected<runtime::Executable>
writeExecutable(mlir::ModuleOp planned, const std::string &configText,
                const SizeBounds &bounds, const CodeTarget &target);

/// Runs the compile pipeline on `module` (a model's functions: @loss at
/// least, for training; keeping the module after every pass in `dumpDir`
/// when given) and writes its executable for `target`.
llvm::Expected<runtime::Executable>
compileModule(mlir::ModuleOp module, const CompilePipelineOptions &pipeline,
              const CodeTarget &target, const std::string &configText = "",
              llvm::StringRef dumpDir = "");

/// Builds `config`'s model and compiles it (compileModule).
llvm::Expected<runtime::Executable>
compileExecutable(const TransformerConfig &config,
                  const CompilePipelineOptions &pipeline,
                  const CodeTarget &target, llvm::StringRef dumpDir = "");

/// compileExecutable for a CPU: code for `cpu` ("native" or a portable
/// level, as `loom compile --cpu`).
llvm::Expected<runtime::Executable> compileCpuExecutable(
    const TransformerConfig &config, const CompilePipelineOptions &pipeline,
    llvm::StringRef dumpDir = "", llvm::StringRef cpu = "native");

} // namespace loom::driver

#endif // LOOM_DRIVER_COMPILEDRIVER_H
