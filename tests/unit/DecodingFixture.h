//===- DecodingFixture.h - A tiny compiled model to decode with -*- C++ -*-===//
//
// The tiny preset compiled for the CPU with random parameters far from
// uniform predictions, and a reference that recomputes a hypothesis's
// whole prefix from scratch at every step: what the decoding and scoring
// tests hold the runtime's searches against.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_DECODINGFIXTURE_H
#define LOOM_TESTS_UNIT_DECODINGFIXTURE_H

#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"
#include "runtime/Decoding.h"
#include "runtime/DecodingControls.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace loom::test {

class DecodingFixture : public ::testing::Test {
protected:
  void SetUp() override {
    model = compile(/*withLogits=*/true);
    ASSERT_TRUE(model);
    // Parameters far from uniform predictions, so that hypotheses differ.
    randomize(*model);
  }

  /// The tiny preset compiled for the CPU; without @decode_step_logits
  /// (and @decode_step_align) where `withLogits` is false, as an executable
  /// from before they were.
  std::unique_ptr<runtime::Session> compile(bool withLogits) {
    if (!ctx)
      ctx = test::makeContext();
    auto parsed = presetConfig("tiny");
    EXPECT_TRUE(bool(parsed));
    config = *parsed;
    CompilePipelineOptions options;
    // The CPU reads the decoder caches position first where they lie.
    options.keysPositionMajor = true;
    options.training.dModel = config.d_model();
    options.maxLen = 16;
    options.maxBatch = 16;
    options.maxTokens = 256;
    auto module = buildModelModule(*ctx, config);
    EXPECT_TRUE(module);
    if (!module)
      return nullptr;
    if (!withLogits) {
      module->lookupSymbol("decode_step_logits")->erase();
      module->lookupSymbol("decode_step_align")->erase();
    }
    EXPECT_TRUE(mlir::succeeded(runCompilePipeline(*module, options)));
    CpuExecutableOptions exeOptions;
    exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
    auto exe = writeCpuExecutable(*module, exeOptions);
    EXPECT_TRUE(mlir::succeeded(exe));
    if (mlir::failed(exe))
      return nullptr;
    return test::cpuSession(std::move(*exe), 1);
  }

  static void randomize(runtime::Session &session) {
    std::mt19937_64 rng(5);
    for (const std::string &name : session.stateNames()) {
      runtime::Tensor *t = session.state(name);
      std::normal_distribution<float> normal(0.0f, 0.5f);
      for (int64_t i = 0; i < t->numel(); ++i)
        t->f32()[i] = normal(rng);
    }
  }

  runtime::Tensor sources(const std::vector<std::vector<int32_t>> &rows) {
    return test::idsOf(rows);
  }

  /// log p(. | prefix, src) for one sentence, with fresh caches; from
  /// @decode_step_logits, the logits.
  std::vector<float> nextLogProbs(const runtime::Tensor &src,
                                  const std::vector<int32_t> &prefix,
                                  const std::string &entry = "decode_step") {
    auto encoded = model->run("encode", {src.ref()});
    EXPECT_TRUE(bool(encoded));
    std::map<std::string, runtime::Tensor> state;
    for (runtime::NamedTensor &t : *encoded) {
      // [0, N, 1, H, Dh]: position first, one hypothesis.
      std::vector<int64_t> shape = {0, t.tensor.shape()[0], 1,
                                    t.tensor.shape()[1], t.tensor.shape()[3]};
      state["self_" + t.name.substr(6)] =
          test::hostTensor(t.tensor.dtype(), shape);
      state[t.name] = std::move(t.tensor);
    }
    std::vector<int32_t> fed = {2};
    fed.insert(fed.end(), prefix.begin(), prefix.end());
    std::vector<float> out;
    for (size_t t = 0; t < fed.size(); ++t) {
      runtime::Tensor tokens = test::hostTensor(DType::I32, {1, 1});
      *static_cast<int32_t *>(tokens.data()) = fed[t];
      runtime::Tensor position = test::hostTensor(DType::I64, {});
      *static_cast<int64_t *>(position.data()) = int64_t(t);
      runtime::Tensor start = test::hostTensor(DType::I64, {1});
      std::vector<runtime::TensorRef> inputs;
      for (const std::string &name : model->inputNames(entry))
        inputs.push_back(name == "src"        ? src.ref()
                         : name == "tokens"   ? tokens.ref()
                         : name == "position" ? position.ref()
                         : name == "start"    ? start.ref()
                                              : state.at(name).ref());
      auto step = model->run(entry, inputs);
      EXPECT_TRUE(bool(step)) << step.error();
      for (runtime::NamedTensor &r : *step) {
        if (r.name == "log_probs" || r.name == "logits")
          out.assign(r.tensor.f32(), r.tensor.f32() + r.tensor.numel());
        else
          state[r.name] = std::move(r.tensor);
      }
    }
    return out;
  }

  /// The log-probabilities after `prefix` with `o`'s controls applied as
  /// a reader of DecodingControls.h would: the logits edited (a ban -inf,
  /// a held token's logit divided by the penalty where positive, else
  /// multiplied), then their log-softmax.
  std::vector<float> controlledLogProbs(const runtime::Tensor &src,
                                        const std::vector<int32_t> &prefix,
                                        const runtime::DecodingControls &c) {
    if (!c.any())
      return nextLogProbs(src, prefix);
    std::vector<float> logits = nextLogProbs(src, prefix, "decode_step_logits");
    const float inf = std::numeric_limits<float>::infinity();
    for (size_t v = 0; v < logits.size(); ++v) {
      int32_t token = int32_t(v);
      bool held =
          std::find(prefix.begin(), prefix.end(), token) != prefix.end();
      if (held && c.repetitionPenalty != 1)
        logits[v] = logits[v] > 0 ? logits[v] / float(c.repetitionPenalty)
                                  : logits[v] * float(c.repetitionPenalty);
      // Would the token complete a forbidden sequence, or repeat an n-gram?
      std::vector<int32_t> next = prefix;
      next.push_back(token);
      for (const std::vector<int32_t> &seq : c.forbidden)
        if (next.size() >= seq.size() &&
            std::equal(seq.begin(), seq.end(), next.end() - seq.size()))
          logits[v] = -inf;
      size_t n = size_t(c.noRepeatNgram);
      // The n-gram `next` ends with, against every earlier one.
      if (n > 0 && next.size() >= n)
        for (size_t i = 0; i + n < next.size(); ++i)
          if (std::equal(next.begin() + i, next.begin() + i + n,
                         next.end() - n))
            logits[v] = -inf;
    }
    float most = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits)
      sum += std::exp(double(l) - most);
    for (float &l : logits)
      l = float(double(l) - most - std::log(sum));
    return logits;
  }

  /// Beam search for one sentence, every prefix recomputed from scratch,
  /// decoding on to maxLen and keeping every hypothesis that ends.
  std::vector<runtime::Hypothesis>
  referenceBeam(const std::vector<int32_t> &row, const runtime::BeamOptions &o,
                const std::vector<int32_t> &prefix = {}) {
    runtime::Tensor src = sources({row});
    auto penalty = [&](int64_t n) {
      return o.powerPenalty ? std::pow(double(n), o.alpha)
                            : std::pow((5.0 + n) / 6.0, o.alpha);
    };
    std::vector<std::pair<std::vector<int32_t>, double>> live = {{{}, 0.0}};
    std::vector<runtime::Hypothesis> finished;
    for (int64_t t = 0; t < o.maxLen; ++t) {
      struct Cand {
        double lp;
        size_t parent;
        int32_t token;
      };
      std::vector<Cand> cands;
      for (size_t j = 0; j < live.size(); ++j) {
        // Within the prefix: its token, scored unedited.
        if (size_t(t) < prefix.size()) {
          std::vector<float> lp = nextLogProbs(src, live[j].first);
          cands.push_back({live[j].second + lp[prefix[t]], j, prefix[t]});
          continue;
        }
        std::vector<float> lp =
            controlledLogProbs(src, live[j].first, o.controls);
        for (size_t v = 0; v < lp.size(); ++v)
          if (lp[v] != -std::numeric_limits<float>::infinity())
            cands.push_back({live[j].second + lp[v], j, int32_t(v)});
      }
      std::sort(cands.begin(), cands.end(), [](const Cand &a, const Cand &b) {
        return a.lp > b.lp || (a.lp == b.lp && a.token < b.token);
      });
      cands.resize(std::min<size_t>(cands.size(), 2 * o.beam));
      std::vector<std::pair<std::vector<int32_t>, double>> grown;
      for (const Cand &c : cands) {
        if (int64_t(grown.size()) == o.beam)
          break;
        std::vector<int32_t> tokens = live[c.parent].first;
        if (c.token == o.eos) {
          finished.push_back(
              {tokens, c.lp, c.lp / penalty(int64_t(tokens.size()) + 1)});
          continue;
        }
        tokens.push_back(c.token);
        grown.push_back({tokens, c.lp});
      }
      live = grown;
      if (t + 1 == o.maxLen)
        for (auto &[tokens, lp] : live)
          finished.push_back(
              {tokens, lp, lp / penalty(int64_t(tokens.size()))});
    }
    std::stable_sort(
        finished.begin(), finished.end(),
        [](const runtime::Hypothesis &a, const runtime::Hypothesis &b) {
          return a.score > b.score;
        });
    finished.resize(std::min<size_t>(finished.size(), o.nbest));
    return finished;
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  TransformerConfig config;
  std::unique_ptr<runtime::Session> model;
};

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_DECODINGFIXTURE_H
