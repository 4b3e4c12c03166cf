//===- Pipeline.cpp - Loom's pass pipelines -------------------------------===//

#include "passes/Pipeline.h"

#include "passes/Passes.h"

using namespace mlir;

void loom::buildTrainingPipeline(OpPassManager &pm,
                                 const TrainingPipelineOptions &options) {
  pm.addPass(createLoomAutodiff());
  LoomOptimizerOptions opt;
  opt.dModel = options.dModel;
  opt.warmup = options.warmup;
  opt.lrScale = options.lrScale;
  opt.clipNorm = options.clipNorm;
  pm.addPass(createLoomOptimizer(opt));
}

LogicalResult
loom::runTrainingPipeline(ModuleOp module,
                          const TrainingPipelineOptions &options) {
  PassManager pm(module.getContext());
  buildTrainingPipeline(pm, options);
  return pm.run(module);
}
