//===- CpuBackend.h - Compiling and loading models for the CPU --*- C++ -*-===//
//
// What every command that runs a model on the CPU backend shares: build the
// model from its config, run the compile pipeline for the bounds of the
// batches it will see, write the executable, load it into a CpuModel and
// bind named parameters.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_CPUBACKEND_H
#define LOOM_TOOLS_LOOM_CPUBACKEND_H

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "passes/Pipeline.h"
#include "runtime/cpu/CpuModel.h"

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

/// Builds `config`'s model, compiles it and writes the CPU executable.
llvm::Expected<runtime::Executable>
compileCpuExecutable(const TransformerConfig &config,
                     const CompilePipelineOptions &pipeline,
                     llvm::StringRef dumpDir = "");

/// Loads `exe` with `threads` threads.
llvm::Expected<std::unique_ptr<cpu::CpuModel>>
loadCpuModel(runtime::Executable exe, int threads);

/// Copies `weights` into the model's parameters; every parameter must be
/// given with its shape.
llvm::Error bindParameters(cpu::CpuModel &model, const NamedTensors &weights);

/// Reads the model's parameters from the safetensors file at `path`: every
/// parameter, by name, with its shape.
llvm::Error loadParameters(cpu::CpuModel &model, const std::string &path);

/// Draws every parameter as initialParameters(seed) would, straight into
/// the model's f32 state.
void initParameters(cpu::CpuModel &model, uint64_t seed);

/// Runs one @train_step on a batch: dropout drawn from `seed`, the schedule
/// and Adam's bias correction at `step` (from 1). The model's parameters and
/// moments are updated in place; returns the batch's loss as computed.
llvm::Expected<double> runTrainStep(cpu::CpuModel &model,
                                    const cpu::Tensor &src,
                                    const cpu::Tensor &tgt, int64_t seed,
                                    int64_t step);

/// A [rows, longest] i32 tensor of `rows`, padded with 0.
cpu::Tensor idsTensor(const std::vector<std::vector<int64_t>> &rows);

/// A rank-0 tensor.
cpu::Tensor scalarTensor(cpu::DType dtype, double value);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_CPUBACKEND_H
