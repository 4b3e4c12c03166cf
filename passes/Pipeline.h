//===- Pipeline.h - Loom's pass pipelines -----------------------*- C++ -*-===//

#ifndef LOOM_PASSES_PIPELINE_H
#define LOOM_PASSES_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace loom {

/// What the training pipeline needs to know beyond the module itself.
struct TrainingPipelineOptions {
  int64_t dModel = 512;
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
};

/// Adds the passes that turn a model module into a trainable one:
/// loom-autodiff (@loss -> @loss_grad), then loom-optimizer (@train_step).
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options);

/// Runs the training pipeline on `module`; diagnostics go to the context's
/// handler.
mlir::LogicalResult runTrainingPipeline(mlir::ModuleOp module,
                                        const TrainingPipelineOptions &options);

} // namespace loom

#endif // LOOM_PASSES_PIPELINE_H
