//===- Pipeline.cpp - Loom's pass pipelines -------------------------------===//

#include "passes/Pipeline.h"

#include "passes/Passes.h"

#include "abi/ModelAbi.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace loom;

static LoomOptimizerOptions
optimizerOptions(const TrainingPipelineOptions &options) {
  LoomOptimizerOptions opt;
  opt.dModel = options.dModel;
  opt.warmup = options.warmup;
  opt.lrScale = options.lrScale;
  opt.clipNorm = options.clipNorm;
  return opt;
}

double loom::learningRate(const TrainingPipelineOptions &options,
                          int64_t step) {
  return learningRateSchedule(options).at(step);
}

void loom::buildTrainingPipeline(OpPassManager &pm,
                                 const TrainingPipelineOptions &options) {
  pm.addPass(createLoomAutodiff());
  if (options.dataParallel)
    pm.addPass(createLoomDataParallel({abi::kLossGrad, options.bucketBytes}));
  pm.addPass(createLoomOptimizer(optimizerOptions(options)));
}

LogicalResult
loom::runTrainingPipeline(ModuleOp module,
                          const TrainingPipelineOptions &options) {
  PassManager pm(module.getContext());
  buildTrainingPipeline(pm, options);
  return pm.run(module);
}

std::vector<PipelineStage>
loom::compilePipelineStages(const CompilePipelineOptions &options) {
  std::vector<PipelineStage> stages;
  bool remarks = options.remarks;
  if (options.fuse) {
    stages.push_back({"loom-split-projections", [remarks](OpPassManager &pm) {
                        pm.addNestedPass<func::FuncOp>(
                            createLoomSplitProjections({remarks}));
                      }});
    stages.push_back({"loom-fuse-attention", [remarks](OpPassManager &pm) {
                        pm.addNestedPass<func::FuncOp>(
                            createLoomFuseAttention({remarks}));
                      }});
    stages.push_back({"loom-fuse-layer-norm", [remarks](OpPassManager &pm) {
                        pm.addNestedPass<func::FuncOp>(
                            createLoomFuseLayerNorm({remarks}));
                      }});
    stages.push_back({"loom-fuse-linear", [remarks](OpPassManager &pm) {
                        pm.addNestedPass<func::FuncOp>(
                            createLoomFuseLinear({remarks}));
                      }});
  }
  TrainingPipelineOptions training = options.training;
  if (options.differentiate) {
    stages.push_back({"loom-autodiff", [](OpPassManager &pm) {
                        pm.addPass(createLoomAutodiff());
                      }});
    if (training.dataParallel)
      stages.push_back({"loom-data-parallel", [training](OpPassManager &pm) {
                          pm.addPass(createLoomDataParallel(
                              {abi::kLossGrad, training.bucketBytes}));
                        }});
    stages.push_back({"loom-optimizer", [training](OpPassManager &pm) {
                        pm.addPass(
                            createLoomOptimizer(optimizerOptions(training)));
                      }});
    if (training.precision != "fp32")
      stages.push_back({"loom-mixed-precision", [training](OpPassManager &pm) {
                          pm.addNestedPass<func::FuncOp>(
                              createLoomMixedPrecision({training.precision}));
                        }});
  }
  stages.push_back({"cse", [](OpPassManager &pm) {
                      pm.addNestedPass<func::FuncOp>(createCSEPass());
                    }});
  if (options.fuse && options.keysPositionMajor)
    stages.push_back(
        {"loom-attention-key-layout", [remarks](OpPassManager &pm) {
           pm.addNestedPass<func::FuncOp>(
               createLoomAttentionKeyLayout({remarks}));
         }});
  if (options.cachePrecision != "fp32") {
    std::string precision = options.cachePrecision;
    stages.push_back(
        {"loom-cache-precision", [precision, remarks](OpPassManager &pm) {
           pm.addPass(createLoomCachePrecision({precision, remarks}));
         }});
  }
  if (options.fuse)
    stages.push_back({"loom-fuse-elementwise", [remarks](OpPassManager &pm) {
                        pm.addNestedPass<func::FuncOp>(
                            createLoomFuseElementwise({remarks}));
                      }});
  if (options.planMemory) {
    LoomPlanMemoryOptions plan;
    plan.maxTokens = options.maxTokens;
    plan.maxLen = options.maxLen;
    plan.maxBatch = options.maxBatch;
    stages.push_back({"loom-plan-memory", [plan](OpPassManager &pm) {
                        pm.addPass(createLoomPlanMemory(plan));
                      }});
  }
  return stages;
}

void loom::buildCompilePipeline(OpPassManager &pm,
                                const CompilePipelineOptions &options) {
  for (const PipelineStage &stage : compilePipelineStages(options))
    stage.add(pm);
}

/// Writes `module` to `dir/name`; reports a failure on the module.
static LogicalResult dumpModule(ModuleOp module, StringRef dir,
                                StringRef name) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::string problem;
  auto out = openOutputFile(path, &problem);
  if (!out)
    return module.emitError("cannot write the IR dump '")
           << path << "': " << problem;
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return success();
}

LogicalResult loom::runCompilePipeline(ModuleOp module,
                                       const CompilePipelineOptions &options,
                                       StringRef dumpDir) {
  if (!dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir))
      return module.emitError("cannot create the dump directory '")
             << dumpDir << "': " << ec.message();
    if (failed(dumpModule(module, dumpDir, "00-input.mlir")))
      return failure();
  }
  // One pass manager per stage, so a dump shows the whole module after each
  // stage even where the stage runs nested on functions.
  int index = 0;
  for (const PipelineStage &stage : compilePipelineStages(options)) {
    PassManager pm(module.getContext());
    stage.add(pm);
    if (failed(pm.run(module)))
      return failure();
    ++index;
    if (!dumpDir.empty() &&
        failed(dumpModule(module, dumpDir,
                          (llvm::Twine(index < 10 ? "0" : "") +
                           llvm::Twine(index) + "-" + stage.name + ".mlir")
                              .str())))
      return failure();
  }
  return success();
}

void loom::registerCompilePipeline() {
  PassPipelineRegistration<>(
      "loom-compile",
      "The whole pipeline: fusion, autodiff, Adam, elementwise fusion, "
      "memory planning (with default options)",
      [](OpPassManager &pm) { buildCompilePipeline(pm, {}); });
}
