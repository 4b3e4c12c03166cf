//===- CpuBackend.h - Compiling and loading models for the CPU --*- C++ -*-===//
//
// What every command that runs a model on the CPU backend shares: build the
// model from its config, run the compile pipeline for the bounds of the
// batches it will see, write the executable, open a session on the CPU
// device and bind named parameters. The runtime reports failures as
// loom::Status; `toError` turns one into the llvm::Error the commands use.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_CPUBACKEND_H
#define LOOM_TOOLS_LOOM_CPUBACKEND_H

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "passes/Pipeline.h"
#include "passes/SymbolicShapes.h"
#include "runtime/Session.h"
#include "runtime/TrainStep.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace loom::cli {

/// Prints every diagnostic of `ctx` (remarks included) to stderr with its
/// location, while alive.
std::unique_ptr<mlir::ScopedDiagnosticHandler>
printDiagnostics(mlir::MLIRContext &ctx);

/// The pipeline options for `config` planned for batches within the bounds.
CompilePipelineOptions pipelineFor(const TransformerConfig &config,
                                   int64_t maxTokens, int64_t maxLen,
                                   int64_t maxBatch);

/// Builds `config`'s model, compiles it and writes the CPU executable, with
/// code for `cpu` ("native" or a portable level, as `loom compile --cpu`).
llvm::Expected<runtime::Executable> compileCpuExecutable(
    const TransformerConfig &config, const CompilePipelineOptions &pipeline,
    llvm::StringRef dumpDir = "", llvm::StringRef cpu = "native");

/// Opens a session of `exe` on a CPU device with `threads` threads (<= 0:
/// one per hardware thread).
llvm::Expected<std::unique_ptr<runtime::Session>>
loadCpuSession(runtime::Executable exe, int threads);

/// The device a command's `--device` names ("cpu", "cuda", "cuda:N"), with
/// `threads` host threads for the CPU; opened before anything is compiled
/// for it, so that a machine without it says so at once.
llvm::Expected<std::shared_ptr<runtime::Device>>
openCommandDevice(const std::string &kind, int threads);

/// What an executable's code is for: a CPU (a level of abi/CpuFeatures.h,
/// "native" for this machine) or, with `cudaArch` set, a GPU architecture.
struct CodeTarget {
  std::string cpu = "native";
  std::string cudaArch; // "sm_90"
  /// What decoding's linear layers multiply in on the CPU: "fp32", "int8",
  /// "bf16" (CpuTarget.linear_precision).
  std::string precision = "fp32";
  bool cuda() const { return !cudaArch.empty(); }
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
/// The same for a module that no config describes (an imported model):
/// `configText` is what the executable records of its source ("" for none).
llvm::Expected<runtime::Executable>
writeExecutable(mlir::ModuleOp planned, const std::string &configText,
                const SizeBounds &bounds, const CodeTarget &target);

/// Builds `config`'s model, compiles it (keeping the module after every
/// pass in `dumpDir` when given) and writes the executable for `target`.
llvm::Expected<runtime::Executable>
compileExecutable(const TransformerConfig &config,
                  const CompilePipelineOptions &pipeline,
                  const CodeTarget &target, llvm::StringRef dumpDir = "");

/// A session of `exe` on `device`.
llvm::Expected<std::unique_ptr<runtime::Session>>
loadSession(runtime::Executable exe, std::shared_ptr<runtime::Device> device);

/// The threads of the CPU device `session` runs on; 0 on another device.
int cpuThreads(runtime::Session &session);

/// Reads the session's parameters from the safetensors file at `path`:
/// every parameter, by name, with its shape.
llvm::Error loadParameters(runtime::Session &session, const std::string &path);

/// Draws every parameter as initialParameters(seed) would, straight into
/// the session's f32 state.
llvm::Error initParameters(runtime::Session &session, uint64_t seed);

/// Runs one @train_step (runtime::runTrainStep).
llvm::Expected<double> runTrainStep(runtime::Session &session,
                                    const runtime::Tensor &src,
                                    const runtime::Tensor &tgt, int64_t seed,
                                    int64_t step);

/// A [rows, longest] i32 host tensor of `rows`, padded with 0.
llvm::Expected<runtime::Tensor>
idsTensor(const std::vector<std::vector<int64_t>> &rows);

/// A rank-0 host tensor.
llvm::Expected<runtime::Tensor> scalarTensor(DType dtype, double value);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_CPUBACKEND_H
