//===- PipelineTest.cpp - The pipeline keeps every function's meaning --===//
//
// The model compiled with every pass (fusion, autodiff, Adam, elementwise
// fusion, memory planning) must compute what the plain module computes
// (autodiff and Adam only): for random parameters and inputs, every entry
// point, run on the f64 reference interpreter, agrees to 1e-5 relative, for
// `tiny` and for `small` (with its dropout on, so the fused attention's and
// the fusion regions' dropout masks must match the unfused ones too).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace loom;

namespace {

HostTensor randomFloats(std::mt19937_64 &rng, std::vector<int64_t> shape) {
  HostTensor t(std::move(shape), DType::F32);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (double &x : t.data)
    x = normal(rng);
  return t;
}

/// Compares every result of `fn` on both modules.
void expectSameResults(const InterpretedModel &plain,
                       const InterpretedModel &compiled, llvm::StringRef fn,
                       const NamedTensors &inputs) {
  auto expected = plain.call(fn, inputs);
  ASSERT_TRUE(bool(expected)) << llvm::toString(expected.takeError());
  auto actual = compiled.call(fn, inputs);
  ASSERT_TRUE(bool(actual)) << llvm::toString(actual.takeError());
  ASSERT_EQ(expected->size(), actual->size()) << "@" << fn.str();
  for (auto &[name, value] : *expected) {
    auto it = actual->find(name);
    ASSERT_NE(it, actual->end()) << "@" << fn.str() << " lost " << name;
    ASSERT_EQ(it->second.shape, value.shape) << "@" << fn.str() << " " << name;
    EXPECT_LT(test::relativeError(it->second, value), 1e-5)
        << "@" << fn.str() << " result " << name;
  }
}

class PipelineTest : public ::testing::TestWithParam<const char *> {};

TEST_P(PipelineTest, EveryEntryPointKeepsItsMeaning) {
  auto ctx = test::makeContext();
  auto config = presetConfig(GetParam());
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  CompilePipelineOptions options;
  options.training.dModel = config->d_model();
  options.training.warmup = 10;
  options.maxTokens = 64;
  options.maxLen = 16;
  options.maxBatch = 8;
  // The CPU's pipeline: attention reads the decoder caches position first.
  options.keysPositionMajor = true;

  auto plainModule = buildModelModule(*ctx, *config);
  auto compiledModule = buildModelModule(*ctx, *config);
  ASSERT_TRUE(plainModule && compiledModule);
  CompilePipelineOptions plainOptions = options;
  plainOptions.fuse = false;
  plainOptions.planMemory = false;
  ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*plainModule, plainOptions)));
  ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*compiledModule, options)));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*compiledModule)));

  InterpreterOptions f64;
  f64.f64 = true;
  InterpretedModel plain(*plainModule, f64), compiled(*compiledModule, f64);
  plain.initParameters(3);
  compiled.parameters() = plain.parameters();

  std::mt19937_64 rng(11);
  int64_t vocab = std::min(config->src_vocab(), config->tgt_vocab());
  HostTensor src = test::randomIds(rng, vocab, {5, 3, 4}, 5, false);
  HostTensor tgt = test::randomIds(rng, vocab, {6, 4, 2}, 6, true);
  NamedTensors inputs = {{"src", src},
                         {"tgt", tgt},
                         {"seed", HostTensor::scalar(1234, DType::I64)},
                         {"step", HostTensor::scalar(3, DType::I64)}};
  // Adam's moments as a few steps in would hold them.
  for (auto &[name, value] : plain.parameters()) {
    inputs["exp_avg." + name] = randomFloats(rng, value.shape);
    HostTensor v = randomFloats(rng, value.shape);
    for (double &x : v.data)
      x = x * x * 1e-3;
    inputs["exp_avg_sq." + name] = v;
  }
  for (const char *fn :
       {"loss", "loss_grad", "train_step", "token_log_probs", "encode"})
    expectSameResults(plain, compiled, fn, inputs);

  // One decoding step of two hypotheses per sentence after two cached
  // positions.
  auto encoded = plain.call("encode", inputs);
  ASSERT_TRUE(bool(encoded)) << llvm::toString(encoded.takeError());
  NamedTensors step = *encoded;
  step["src"] = src;
  for (auto &[name, value] : *encoded) {
    // [N, H, S, Dh] -> [T = 2, N, 2, H, Dh], position first.
    std::vector<int64_t> shape = {2, value.shape[0], 2, value.shape[1],
                                  value.shape[3]};
    step["self_" + name.substr(std::string("cross_").size())] =
        randomFloats(rng, shape);
  }
  step["tokens"] = test::randomIds(rng, vocab, {2, 2, 2}, 2, false);
  step["position"] = HostTensor::scalar(2, DType::I64);
  // The second sentence joined after the first position: it reads only
  // the second and its own.
  step["start"] = HostTensor({3}, DType::I64);
  step["start"].data = {0, 1, 0};
  expectSameResults(plain, compiled, "decode_step", step);
}

INSTANTIATE_TEST_SUITE_P(Presets, PipelineTest,
                         ::testing::Values("tiny", "small"));

} // namespace
