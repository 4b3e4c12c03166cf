//===- DecodePrecisionTest.cpp - int8 and bf16 decoding against fp32 -----===//
//
// The tiny model trained on the reverse task with the compiled CPU
// executable, then decoded greedily on held-out sentences by three
// executables of the same module that differ only in what decoding's linear
// layers multiply in (CpuTarget.linear_precision). fp32 must give exactly
// what the reference interpreter gives; int8 and bf16 must give the same
// tokens for most sentences, and where the tokens agree, the sentence's
// log-probability within a stated tolerance: 0.05 nats per token for int8
// (weights per output channel, rows per row, 8 bits each; twice that where
// the CPU has no VNNI and weights keep 7 bits) and 0.02 for bf16 (8-bit
// mantissas, f32 accumulation). The bf16 executable also holds the
// decoder's caches in bf16 (loom-cache-precision), as `loom compile
// --precision bf16` builds it. Where the CPU has no AVX512-BF16 the bf16
// executable is refused, and then run through LOOM_CPU_EMULATE_BF16.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"
#include "TestUtil.h"

#include "abi/ModelAbi.h"
#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/SyntheticTask.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"
#include "runtime/Decoding.h"
#include "runtime/ExecutableValidation.h"
#include "runtime/TrainStep.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/cpu/PackedGemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

using namespace loom;

namespace {

constexpr int64_t kSteps = 600, kBatch = 32, kHeldOut = 100;

std::vector<std::vector<int32_t>>
toInt32(const std::vector<std::vector<int64_t>> &rows) {
  std::vector<std::vector<int32_t>> out;
  for (const auto &row : rows)
    out.emplace_back(row.begin(), row.end());
  return out;
}

TEST(DecodePrecision, Int8AndBf16AgreeWithFp32OnATrainedModel) {
  auto ctx = test::makeContext();
  auto config = presetConfig("tiny");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  CompilePipelineOptions options;
  // The CPU reads the decoder caches position first where they lie.
  options.keysPositionMajor = true;
  options.training.dModel = config->d_model();
  options.training.warmup = 100;
  options.maxTokens = kHeldOut * 16;
  options.maxLen = 16;
  options.maxBatch = kHeldOut;
  auto module = buildModelModule(*ctx, *config);
  ASSERT_TRUE(module);
  ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*module, options)));
  // The same model with its decoder's caches in bf16.
  auto narrowCaches = buildModelModule(*ctx, *config);
  ASSERT_TRUE(narrowCaches);
  CompilePipelineOptions narrowOptions = options;
  narrowOptions.cachePrecision = "bf16";
  ASSERT_TRUE(
      mlir::succeeded(runCompilePipeline(*narrowCaches, narrowOptions)));
  auto executableAt = [&](const char *precision) {
    CpuExecutableOptions exeOptions;
    exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
    exeOptions.linearPrecision = precision;
    bool bf16 = std::string(precision) == "bf16";
    auto exe = writeCpuExecutable(bf16 ? *narrowCaches : *module, exeOptions);
    EXPECT_TRUE(mlir::succeeded(exe));
    // Every cache @decode_step reads is held in the precision's type.
    int caches = 0;
    for (const auto &entry : exe->entry_points())
      if (entry.name() == loom::abi::kDecodeStep)
        for (int32_t input : entry.inputs()) {
          const auto &buffer = exe->buffers(input);
          std::string name = runtime::localBufferName(buffer.name());
          if (!loom::abi::hasPrefix(name, loom::abi::kSelfPrefix) &&
              !loom::abi::hasPrefix(name, loom::abi::kCrossPrefix))
            continue;
          ++caches;
          EXPECT_EQ(buffer.dtype(),
                    bf16 ? runtime::Buffer::BF16 : runtime::Buffer::F32)
              << buffer.name();
        }
    EXPECT_EQ(caches, 4 * config->decoder_layers());
    return *exe;
  };
  auto fp32 = test::cpuSession(executableAt("fp32"), 1);
  ASSERT_TRUE(fp32);

  // Torch's initialization, from the interpreter's model of the same module.
  auto reference = buildModelModule(*ctx, *config);
  ASSERT_TRUE(reference);
  ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*reference, options)));
  InterpretedModel oracle(*reference);
  oracle.initParameters(7);
  for (auto &[name, value] : oracle.parameters()) {
    runtime::Tensor *state = fp32->state(name);
    ASSERT_TRUE(state) << name;
    ASSERT_EQ(state->numel(), value.numel()) << name;
    for (int64_t i = 0; i < value.numel(); ++i)
      state->f32()[i] = float(value.data[i]);
  }

  SyntheticTask task;
  task.vocab = config->tgt_vocab();
  double loss = 0;
  for (int64_t step = 1; step <= kSteps; ++step) {
    auto batch = makeSyntheticPairs(task, kBatch, 1000 + step);
    auto src = runtime::idsTensor(sourcesOf(batch));
    auto tgt = runtime::idsTensor(targetsOf(batch));
    ASSERT_TRUE(src && tgt);
    auto stepLoss = runtime::runTrainStep(*fp32, src->ref(), tgt->ref(),
                                          /*seed=*/step, step);
    ASSERT_TRUE(bool(stepLoss)) << stepLoss.error();
    loss = *stepLoss;
  }
  ASSERT_LT(loss, 0.6) << "the model did not learn the task";

  auto heldOut = makeSyntheticPairs(task, kHeldOut, /*seed=*/99);
  runtime::Tensor src = test::idsOf(toInt32(sourcesOf(heldOut)));
  runtime::BeamOptions greedy;
  greedy.beam = 1;
  greedy.maxLen = task.maxLength + 2;
  auto expected = runtime::beamSearch(*fp32, src.ref(), greedy);
  ASSERT_TRUE(bool(expected)) << expected.error();

  // fp32 is what the reference interpreter decodes with these parameters.
  for (const std::string &name : fp32->parameterNames()) {
    auto value = fp32->getState(name);
    ASSERT_TRUE(bool(value)) << value.error();
    HostTensor &param = oracle.parameters().at(name);
    for (int64_t i = 0; i < param.numel(); ++i)
      param.data[i] = value->f32()[i];
  }
  auto interpreted = oracle.greedy(padBatch(sourcesOf(heldOut)), greedy.maxLen,
                                   loom::abi::kBosId, loom::abi::kEosId);
  ASSERT_TRUE(bool(interpreted)) << llvm::toString(interpreted.takeError());
  int64_t exact = 0;
  for (int64_t s = 0; s < kHeldOut; ++s) {
    std::vector<int32_t> tokens((*interpreted)[s].begin(),
                                (*interpreted)[s].end());
    EXPECT_EQ((*expected)[s][0].tokens, tokens) << "sentence " << s;
    exact += tokens == toInt32({syntheticAnswer(task, heldOut[s].src)})[0];
  }
  EXPECT_GE(exact, kHeldOut / 2) << "too few right answers to compare on";

  // Greedy decoding drops finished sentences from the batch a few at a time
  // (beam search at once); neither may change what a sentence decodes to.
  runtime::GreedyOptions plainGreedy;
  plainGreedy.maxLen = greedy.maxLen;
  auto dropping = runtime::greedyDecode(*fp32, src.ref(), plainGreedy);
  ASSERT_TRUE(bool(dropping)) << dropping.error();
  std::set<size_t> lengths;
  for (int64_t s = 0; s < kHeldOut; ++s) {
    EXPECT_EQ((*dropping)[s], (*expected)[s][0].tokens) << "sentence " << s;
    lengths.insert((*dropping)[s].size());
  }
  EXPECT_GE(lengths.size(), 3u) << "sentences must end at different steps";

  std::vector<std::string> features = cpu::hostCpuFeatures();
  bool bf16 = std::count(features.begin(), features.end(), "avx512bf16");
  // A CPU without VNNI keeps int8 weights within +-63, a quantization step
  // twice VNNI's, and the log-probabilities part by about twice as much
  // (0.035 nats per token seen with VNNI, 0.052 without).
  double int8Tolerance = 0.05 * 127.0 / double(cpu::int8WeightLimit());
  for (auto [precision, tolerance] :
       {std::pair{"int8", int8Tolerance}, std::pair{"bf16", 0.02}}) {
    SCOPED_TRACE(precision);
    std::optional<test::ScopedEnv> emulate;
    if (std::string(precision) == "bf16" && !bf16) {
      // Refused where the CPU cannot multiply in bf16.
      runtime::Executable exe = executableAt(precision);
      auto program = runtime::Program::create(std::move(exe));
      ASSERT_TRUE(bool(program));
      auto device = runtime::openDevice("cpu", 1);
      ASSERT_TRUE(bool(device));
      auto session = runtime::Session::create(*program, *device);
      ASSERT_FALSE(bool(session));
      EXPECT_NE(session.error().find("AVX512-BF16"), std::string::npos);
      // Emulated (LOOM_CPU_EMULATE_BF16), it must still decode as bf16
      // does: the factors rounded, the sums f32.
      emulate.emplace(cpu::kEmulateBf16Env, "1");
    }
    auto lower = test::cpuSession(executableAt(precision), 1);
    ASSERT_TRUE(lower);
    ASSERT_TRUE(test::copyState(*fp32, *lower));
    // Twice: the first run multiplies in f32 (the weights are packed, and
    // quantized, the second time they are seen).
    ASSERT_TRUE(bool(runtime::beamSearch(*lower, src.ref(), greedy)));
    auto actual = runtime::beamSearch(*lower, src.ref(), greedy);
    ASSERT_TRUE(bool(actual)) << actual.error();
    int64_t same = 0;
    double worst = 0;
    for (int64_t s = 0; s < kHeldOut; ++s) {
      const runtime::Hypothesis &a = (*actual)[s][0], &e = (*expected)[s][0];
      if (a.tokens != e.tokens)
        continue;
      ++same;
      double perToken =
          std::fabs(a.logProb - e.logProb) / double(e.tokens.size() + 1);
      worst = std::max(worst, perToken);
    }
    EXPECT_GE(same, kHeldOut * 9 / 10);
    EXPECT_LE(worst, tolerance);
    // Not the f32 product in disguise.
    EXPECT_GT(worst, 0.0);
    bool emulated = std::string(precision) == "bf16" && !bf16;
    std::cout << precision << (emulated ? " (emulated)" : "") << ": " << same
              << "/" << kHeldOut
              << " sentences as fp32, log-probability off by at most " << worst
              << " per token\n";
  }
}

} // namespace
