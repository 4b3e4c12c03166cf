//===- ScoringTest.cpp - Forced decoding against the search and a reference
//===//
//
// Scoring a translation feeds it to @decode_step token by token. Each
// token's log-probability must be the one a from-scratch recomputation of
// its prefix gives, whatever the batch, and the hypotheses beam search
// returned must score the log-probabilities it reported for them. The
// search's other per-token output, its alignments, is refused where the
// executable cannot give it.
//
//===----------------------------------------------------------------------===//

#include "runtime/Scoring.h"
#include "runtime/Decoding.h"

#include "DecodingFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace loom;

namespace {

using ScoringTest = test::DecodingFixture;

const std::vector<std::vector<int32_t>> kSources = {
    {5, 9, 11, 7, 3}, {12, 4, 3}, {8, 8, 20, 17, 6, 13, 3}};

double sum(const std::vector<float> &values) {
  double total = 0;
  for (float v : values)
    total += v;
  return total;
}

TEST_F(ScoringTest, EachTokenScoresItsRecomputedLogProbability) {
  // Targets of different lengths, the empty one included: rows leave the
  // batch as their targets end.
  std::vector<std::vector<int32_t>> targets = {
      {7, 7, 30, 4}, {}, {9, 12, 5, 6, 21, 8, 31, 3}};
  runtime::Tensor src = sources(kSources);
  auto scored = runtime::scoreTargets(*model, src.ref(), targets);
  ASSERT_TRUE(bool(scored)) << scored.error();
  ASSERT_EQ(scored->size(), targets.size());
  for (size_t s = 0; s < targets.size(); ++s) {
    ASSERT_EQ((*scored)[s].size(), targets[s].size() + 1) << "sentence " << s;
    runtime::Tensor one = sources({kSources[s]});
    for (size_t t = 0; t <= targets[s].size(); ++t) {
      std::vector<int32_t> prefix(targets[s].begin(), targets[s].begin() + t);
      std::vector<float> lp = nextLogProbs(one, prefix);
      int32_t token = t < targets[s].size() ? targets[s][t] : 3;
      EXPECT_NEAR((*scored)[s][t], lp[token], 1e-4)
          << "sentence " << s << " token " << t;
    }
  }
}

TEST_F(ScoringTest, TheSearchsHypothesesScoreWhatItReported) {
  runtime::Tensor src = sources(kSources);
  for (int64_t beam : {1, 4}) {
    runtime::BeamOptions o;
    o.beam = beam;
    o.nbest = beam;
    o.maxLen = 10;
    o.alpha = 0.6;
    auto found = runtime::beamSearch(*model, src.ref(), o);
    ASSERT_TRUE(bool(found)) << found.error();
    for (size_t s = 0; s < found->size(); ++s)
      for (const runtime::Hypothesis &h : (*found)[s]) {
        runtime::Tensor one = sources({kSources[s]});
        auto scored = runtime::scoreTargets(*model, one.ref(), {h.tokens});
        ASSERT_TRUE(bool(scored)) << scored.error();
        // One cut off at maxLen has no eos, whose log-probability scoring
        // adds last; one that ended has it.
        std::vector<float> &tokens = (*scored)[0];
        bool ended = int64_t(h.tokens.size()) < o.maxLen;
        if (!ended)
          tokens.pop_back();
        double logProb = sum(tokens);
        // The same steps and the same sums: equal but for the rounding of
        // a GEMM over another number of rows.
        EXPECT_NEAR(logProb, h.logProb, 1e-4 * std::abs(h.logProb) + 1e-5)
            << "beam " << beam << " sentence " << s;
        double score = logProb / runtime::lengthPenalty(int64_t(tokens.size()),
                                                        o.alpha, false);
        EXPECT_NEAR(score, h.score, 1e-4 * std::abs(h.score) + 1e-5);
      }
  }
}

TEST_F(ScoringTest, APairScoresTheSameInAnyBatch) {
  std::vector<std::vector<int32_t>> targets = {{7, 7, 30, 4}, {}, {9, 12, 5}};
  std::vector<std::vector<float>> alone;
  for (size_t s = 0; s < kSources.size(); ++s) {
    runtime::Tensor one = sources({kSources[s]});
    auto scored = runtime::scoreTargets(*model, one.ref(), {targets[s]});
    ASSERT_TRUE(bool(scored)) << scored.error();
    alone.push_back((*scored)[0]);
  }
  // Reversed, and each pair twice.
  std::vector<size_t> order = {2, 1, 0, 2, 1, 0};
  std::vector<std::vector<int32_t>> rows, batchTargets;
  for (size_t s : order) {
    rows.push_back(kSources[s]);
    batchTargets.push_back(targets[s]);
  }
  runtime::Tensor src = sources(rows);
  auto scored = runtime::scoreTargets(*model, src.ref(), batchTargets);
  ASSERT_TRUE(bool(scored)) << scored.error();
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ((*scored)[i].size(), alone[order[i]].size());
    for (size_t t = 0; t < alone[order[i]].size(); ++t)
      EXPECT_NEAR((*scored)[i][t], alone[order[i]][t], 1e-5);
  }
}

TEST_F(ScoringTest, WithoutStepLogitsScoresTheLogProbs) {
  // An executable without @decode_step_logits: the step's log-softmax.
  std::unique_ptr<runtime::Session> old = compile(/*withLogits=*/false);
  ASSERT_TRUE(old);
  randomize(*old);
  std::vector<std::vector<int32_t>> targets = {{7, 30}, {4}, {9, 12, 5, 6}};
  runtime::Tensor src = sources(kSources);
  auto viaLogits = runtime::scoreTargets(*model, src.ref(), targets);
  auto viaLogProbs = runtime::scoreTargets(*old, src.ref(), targets);
  ASSERT_TRUE(bool(viaLogits)) << viaLogits.error();
  ASSERT_TRUE(bool(viaLogProbs)) << viaLogProbs.error();
  for (size_t s = 0; s < targets.size(); ++s)
    EXPECT_NEAR(sum((*viaLogits)[s]), sum((*viaLogProbs)[s]), 1e-4);
}

// Alignments come from @decode_step_align: an executable without it, or a
// layer the model does not have, is refused with the reason.
TEST_F(ScoringTest, AlignmentsNeedTheirEntryAndALayerOfTheModel) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.maxLen = 6;
  o.alignments = true;
  o.alignmentLayer = int64_t(config.decoder_layers());
  auto beyond = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_FALSE(bool(beyond));
  EXPECT_NE(beyond.error().find("alignment layer " +
                                std::to_string(o.alignmentLayer) +
                                " is not among the model's"),
            std::string::npos)
      << beyond.error();
  o.alignmentLayer = -int64_t(config.decoder_layers());
  auto first = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_TRUE(bool(first)) << first.error();
  for (const std::vector<runtime::Hypothesis> &sentence : *first)
    for (const runtime::Hypothesis &h : sentence) {
      ASSERT_EQ(h.alignment.size(), h.tokens.size());
      for (int32_t position : h.alignment) {
        EXPECT_GE(position, 0);
        EXPECT_LT(position, 7); // the longest source, eos included
      }
    }
  std::unique_ptr<runtime::Session> old = compile(/*withLogits=*/false);
  ASSERT_TRUE(old);
  auto refused = runtime::beamSearch(*old, src.ref(), o);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(refused.error().find("no @decode_step_align"), std::string::npos)
      << refused.error();
}

TEST_F(ScoringTest, RefusesTokensOutsideTheVocabularyAndMismatchedTargets) {
  runtime::Tensor src = sources(kSources);
  runtime::ScoringOptions o;
  o.sentenceNumbers = {4, 5, 6};
  auto outside =
      runtime::scoreTargets(*model, src.ref(), {{7}, {1 << 20}, {9}}, o);
  ASSERT_FALSE(bool(outside));
  EXPECT_NE(outside.error().find("target of sentence 5 holds token 1048576, "
                                 "outside the vocabulary"),
            std::string::npos)
      << outside.error();
  auto negative = runtime::scoreTargets(*model, src.ref(), {{7}, {4}, {-1}});
  ASSERT_FALSE(bool(negative));
  EXPECT_NE(negative.error().find("sentence 3 holds token -1"),
            std::string::npos)
      << negative.error();
  auto fewer = runtime::scoreTargets(*model, src.ref(), {{7}});
  ASSERT_FALSE(bool(fewer));
  EXPECT_NE(fewer.error().find("1 targets for 3 sentences"), std::string::npos)
      << fewer.error();
}

} // namespace
