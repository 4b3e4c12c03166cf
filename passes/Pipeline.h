//===- Pipeline.h - Loom's pass pipelines -----------------------*- C++ -*-===//
//
// The order in which Loom's passes run, in one place:
//
//   frontend module (@loss, @token_log_probs, @encode, @decode_step)
//     loom-fuse-attention, loom-fuse-layer-norm, loom-fuse-linear
//                                   (before autodiff: fused ops carry their
//                                    own gradient rules)
//     loom-autodiff                 (@loss -> @loss_grad)
//     loom-data-parallel            (with dataParallel: gradients averaged
//                                    across ranks by loom.all_reduce)
//     loom-optimizer                (@train_step)
//     loom-mixed-precision          (with precision bf16: the training
//                                    entries' products read bf16 factors)
//     cse                           (the clones share their constants)
//     loom-attention-key-layout     (with keysPositionMajor: attention
//                                    reads position-first caches in place)
//     loom-cache-precision          (with cachePrecision bf16: the decoder's
//                                    caches in bf16)
//     loom-fuse-elementwise         (loom.fusion regions)
//     loom-plan-memory              (arena offsets)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PIPELINE_H
#define LOOM_PASSES_PIPELINE_H

#include "abi/LearningRate.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom {

/// What the training pipeline needs to know beyond the module itself.
struct TrainingPipelineOptions {
  int64_t dModel = 512;
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  /// Average the gradients across the ranks of a data-parallel job
  /// (loom-data-parallel, between autodiff and the optimizer), in
  /// all-reduces of about `bucketBytes` of gradients each.
  bool dataParallel = false;
  int64_t bucketBytes = 25 << 20;
  /// "fp32", or "bf16": loom-mixed-precision after the optimizer (bf16
  /// factors, f32 sums, f32 master weights and Adam).
  std::string precision = "fp32";
};

/// The schedule loom-optimizer compiles into @train_step.
inline abi::LearningRateSchedule
learningRateSchedule(const TrainingPipelineOptions &options) {
  return {options.dModel, options.warmup, options.lrScale};
}
/// Its rate at `step` (from 1).
double learningRate(const TrainingPipelineOptions &options, int64_t step);

/// Adds the passes that turn a model module into a trainable one:
/// loom-autodiff (@loss -> @loss_grad), then loom-optimizer (@train_step).
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// Runs the training pipeline on `module`; diagnostics go to the context's
/// handler.
mlir::LogicalResult runTrainingPipeline(mlir::ModuleOp module,
                                        const TrainingPipelineOptions &options);

struct CompilePipelineOptions {
  TrainingPipelineOptions training;
  /// Upper bounds of the dynamic dims, for memory planning.
  int64_t maxTokens = 4096;
  int64_t maxLen = 256;
  int64_t maxBatch = 256;
  /// Run the fusion passes (off: the module as autodiff writes it).
  bool fuse = true;
  /// Differentiate the loss and add the optimizer (loom-autodiff,
  /// loom-optimizer): off for a module with no loss, such as an imported
  /// model compiled for inference.
  bool differentiate = true;
  bool planMemory = true;
  /// Fusion passes explain, as remarks, each candidate they decline.
  bool remarks = false;
  /// Attention reads keys held position first where they lie
  /// (loom-attention-key-layout): for devices whose attention kernel takes
  /// them (the CPU's).
  bool keysPositionMajor = false;
  /// "fp32", or "bf16": the decoder's attention caches are held in bf16
  /// (loom-cache-precision), for a device whose attention kernel reads them.
  std::string cachePrecision = "fp32";
};

/// One step of the compile pipeline: its name (the pass's argument) and what
/// it adds to a module-level pass manager.
struct PipelineStage {
  std::string name;
  std::function<void(mlir::OpPassManager &)> add;
};

std::vector<PipelineStage>
compilePipelineStages(const CompilePipelineOptions &options);

/// Adds every stage to `pm`.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompilePipelineOptions &options);

/// Runs the compile pipeline stage by stage. With a `dumpDir`, writes the
/// module as it enters (`00-input.mlir`) and after each stage
/// (`01-loom-fuse-attention.mlir`, ...); each file parses with loom-opt.
mlir::LogicalResult runCompilePipeline(mlir::ModuleOp module,
                                       const CompilePipelineOptions &options,
                                       llvm::StringRef dumpDir = "");

/// Registers the pipeline with the pass registry as `loom-compile`.
void registerCompilePipeline();

} // namespace loom

#endif // LOOM_PASSES_PIPELINE_H
