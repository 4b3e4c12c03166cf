//===- TrainTinyTest.cpp - The tiny Transformer learns a task -------------===//
//
// End to end on the reference interpreter: build the `tiny` model, run
// loom-autodiff and loom-optimizer, train with @train_step on fresh batches of
// the reverse task, and decode held-out sentences greedily through @encode and
// @decode_step. The loss must fall window after window and most held-out
// answers must be exact. Everything is seeded, so the run is reproducible.
//
//===----------------------------------------------------------------------===//

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/SyntheticTask.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace loom;

namespace {

TEST(TrainTiny, LearnsToReverse) {
  auto ctx = test::makeContext();
  auto config = presetConfig("tiny");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  auto module = buildModelModule(*ctx, *config);
  ASSERT_TRUE(module);
  TrainingPipelineOptions pipeline;
  pipeline.dModel = config->d_model();
  pipeline.warmup = 100;
  ASSERT_TRUE(mlir::succeeded(runTrainingPipeline(*module, pipeline)));

  InterpretedModel model(*module);
  model.initParameters(/*seed=*/7);
  SyntheticTask task;
  task.vocab = config->tgt_vocab();

  constexpr int64_t kSteps = 1000, kWindow = 125, kBatch = 32;
  std::vector<double> windows;
  double sum = 0;
  for (int64_t step = 1; step <= kSteps; ++step) {
    auto batch = makeSyntheticPairs(task, kBatch, 1000 + step);
    auto loss = model.trainStep(padBatch(sourcesOf(batch)),
                                padBatch(targetsOf(batch)), step);
    ASSERT_TRUE(bool(loss)) << llvm::toString(loss.takeError());
    sum += *loss;
    if (step % kWindow == 0) {
      windows.push_back(sum / kWindow);
      sum = 0;
    }
  }
  std::string curve;
  for (double w : windows)
    curve += std::to_string(w) + " ";
  std::cout << "mean loss per " << kWindow << " steps: " << curve << "\n";
  // Uniform guessing over the vocabulary costs log(32) = 3.47.
  EXPECT_GT(windows.front(), 2.0);
  for (size_t i = 1; i < windows.size(); ++i)
    EXPECT_LT(windows[i], windows[i - 1])
        << "the loss rose in window " << i << ": " << curve;
  EXPECT_LT(windows.back(), 0.15) << curve;

  auto heldOut = makeSyntheticPairs(task, 200, /*seed=*/99);
  auto outputs = model.greedy(padBatch(sourcesOf(heldOut)), task.maxLength + 2,
                              kBosId, kEosId);
  ASSERT_TRUE(bool(outputs)) << llvm::toString(outputs.takeError());
  int64_t exact = 0;
  for (size_t i = 0; i < heldOut.size(); ++i)
    exact += (*outputs)[i] == syntheticAnswer(task, heldOut[i].src);
  std::cout << "greedy exact match on held-out: " << exact << "/"
            << heldOut.size() << "\n";
  EXPECT_GE(exact, 150) << "of " << heldOut.size();
}

} // namespace
