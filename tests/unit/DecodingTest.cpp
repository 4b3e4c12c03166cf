//===- DecodingTest.cpp - Greedy and beam search on the CPU backend -------===//
//
// Beam search keeps every hypothesis of every sentence as a row of one
// batch, gathers the caches to follow the survivors and drops finished
// sentences. Held against a plain reference that decodes one sentence at a
// time and recomputes each hypothesis's whole prefix from scratch at every
// step, it must find the same hypotheses with the same scores; with beam 1
// it must be greedy decoding.
//
//===----------------------------------------------------------------------===//

#include "runtime/Decoding.h"
#include "runtime/DecodingControls.h"

#include "DecodingFixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>

using namespace loom;

namespace {

using DecodingTest = test::DecodingFixture;

const std::vector<std::vector<int32_t>> kSources = {
    {5, 9, 11, 7, 3}, {12, 4, 3}, {8, 8, 20, 17, 6, 13, 3}};

TEST_F(DecodingTest, BeamOneIsGreedy) {
  runtime::Tensor src = sources(kSources);
  runtime::GreedyOptions greedy;
  greedy.maxLen = 10;
  auto expected = runtime::greedyDecode(*model, src.ref(), greedy);
  ASSERT_TRUE(bool(expected)) << expected.error();
  runtime::BeamOptions beam;
  beam.beam = 1;
  beam.maxLen = 10;
  auto actual = runtime::beamSearch(*model, src.ref(), beam);
  ASSERT_TRUE(bool(actual)) << actual.error();
  ASSERT_EQ(actual->size(), kSources.size());
  for (size_t s = 0; s < kSources.size(); ++s) {
    ASSERT_EQ((*actual)[s].size(), 1u);
    EXPECT_EQ((*actual)[s][0].tokens, (*expected)[s]) << "sentence " << s;
  }
}

// Without scores, beam 1 at alpha 0 ranks each row's logits as they come:
// the same tokens, scores left 0. Where the search compares log-
// probabilities (a length penalty, several results) it still computes them.
TEST_F(DecodingTest, GreedyWithoutScoresRanksTheLogitsAlone) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.beam = 1;
  o.alpha = 0;
  o.maxLen = 10;
  auto scored = runtime::beamSearch(*model, src.ref(), o);
  o.scores = false;
  auto unscored = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_TRUE(scored && unscored);
  for (size_t s = 0; s < kSources.size(); ++s) {
    ASSERT_EQ((*unscored)[s].size(), 1u);
    EXPECT_EQ((*unscored)[s][0].tokens, (*scored)[s][0].tokens)
        << "sentence " << s;
    EXPECT_LT((*scored)[s][0].logProb, 0) << "sentence " << s;
    EXPECT_EQ((*unscored)[s][0].logProb, 0) << "sentence " << s;
    EXPECT_EQ((*unscored)[s][0].score, 0) << "sentence " << s;
  }
  for (auto change : {+[](runtime::BeamOptions &b) { b.alpha = 0.6; },
                      +[](runtime::BeamOptions &b) {
                        b.nbest = 2;
                        b.beam = 2;
                      },
                      +[](runtime::BeamOptions &b) { b.beam = 2; }}) {
    runtime::BeamOptions other = o;
    change(other);
    auto found = runtime::beamSearch(*model, src.ref(), other);
    ASSERT_TRUE(bool(found)) << found.error();
    for (size_t s = 0; s < kSources.size(); ++s)
      for (const runtime::Hypothesis &h : (*found)[s])
        EXPECT_LT(h.logProb, 0) << "sentence " << s;
  }
}

// @decode_step_logits is @decode_step before its log-softmax: the same
// inputs, and logits whose log-softmax is @decode_step's log_probs, so
// that greedy search, which reads them, picks the same tokens.
TEST_F(DecodingTest, StepLogitsAreTheLogProbsBeforeTheSoftmax) {
  ASSERT_EQ(model->inputNames("decode_step_logits"),
            model->inputNames("decode_step"));
  runtime::Tensor src = sources({kSources[2]});
  for (const std::vector<int32_t> &prefix :
       std::vector<std::vector<int32_t>>{{}, {7, 4}, {9, 9, 14, 5}}) {
    std::vector<float> logProbs = nextLogProbs(src, prefix);
    std::vector<float> logits = nextLogProbs(src, prefix, "decode_step_logits");
    ASSERT_EQ(logits.size(), logProbs.size());
    ASSERT_EQ(int64_t(logits.size()), config.tgt_vocab());
    double top = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (float v : logits)
      sum += std::exp(double(v) - top);
    double lse = top + std::log(sum);
    for (size_t v = 0; v < logits.size(); ++v)
      ASSERT_NEAR(double(logits[v]) - lse, logProbs[v], 1e-5)
          << "token " << v << " after " << prefix.size();
    EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(),
              std::max_element(logProbs.begin(), logProbs.end()) -
                  logProbs.begin());
  }
}

// An executable without @decode_step_logits (compiled before it was)
// still decodes, through @decode_step, to the same tokens.
TEST_F(DecodingTest, WithoutStepLogitsSearchesReadTheLogProbs) {
  std::unique_ptr<runtime::Session> older = compile(/*withLogits=*/false);
  ASSERT_TRUE(older);
  ASSERT_FALSE(older->hasEntry("decode_step_logits"));
  ASSERT_TRUE(model->hasEntry("decode_step_logits"));
  randomize(*older);
  runtime::Tensor src = sources(kSources);
  runtime::GreedyOptions greedy;
  greedy.maxLen = 10;
  auto expected = runtime::greedyDecode(*model, src.ref(), greedy);
  auto actual = runtime::greedyDecode(*older, src.ref(), greedy);
  ASSERT_TRUE(expected && actual);
  EXPECT_EQ(*actual, *expected);
  // Beam search too, through @decode_step's log-probabilities there and
  // the logits less each row's log-sum-exp here.
  runtime::BeamOptions o;
  o.beam = 4;
  o.nbest = 3;
  o.maxLen = 8;
  auto fromLogits = runtime::beamSearch(*model, src.ref(), o);
  auto fromLogProbs = runtime::beamSearch(*older, src.ref(), o);
  ASSERT_TRUE(fromLogits && fromLogProbs);
  for (size_t s = 0; s < kSources.size(); ++s) {
    ASSERT_EQ((*fromLogits)[s].size(), (*fromLogProbs)[s].size());
    for (size_t h = 0; h < (*fromLogits)[s].size(); ++h) {
      EXPECT_EQ((*fromLogits)[s][h].tokens, (*fromLogProbs)[s][h].tokens);
      EXPECT_NEAR((*fromLogits)[s][h].logProb, (*fromLogProbs)[s][h].logProb,
                  1e-4);
    }
  }
}

TEST_F(DecodingTest, BeamWithTheCacheMatchesRecomputingEveryPrefix) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.beam = 4;
  o.nbest = 3;
  o.maxLen = 7;
  auto actual = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_TRUE(bool(actual)) << actual.error();
  size_t distinct = 0;
  for (size_t s = 0; s < kSources.size(); ++s) {
    std::vector<runtime::Hypothesis> expected = referenceBeam(kSources[s], o);
    ASSERT_EQ((*actual)[s].size(), expected.size()) << "sentence " << s;
    for (size_t h = 0; h < expected.size(); ++h) {
      EXPECT_EQ((*actual)[s][h].tokens, expected[h].tokens)
          << "sentence " << s << " hypothesis " << h;
      EXPECT_NEAR((*actual)[s][h].score, expected[h].score, 1e-4);
      EXPECT_NEAR((*actual)[s][h].logProb, expected[h].logProb, 1e-4);
    }
    distinct += expected.size() > 1 && expected[0].tokens != expected[1].tokens;
    // Scores are sorted best first.
    for (size_t h = 1; h < (*actual)[s].size(); ++h)
      EXPECT_GE((*actual)[s][h - 1].score, (*actual)[s][h].score);
  }
  EXPECT_GT(distinct, 0u) << "the test needs hypotheses that differ";
}

// The controls of DecodingControls.h, each alone and together, at beam 4
// and greedy: the search finds what the reference finds recomputing every
// prefix with the controls applied to the logits, and the hypotheses obey
// them: no bigram twice, no forbidden sequence.
TEST_F(DecodingTest, ControlsMatchTheReferenceAndHold) {
  runtime::Tensor src = sources(kSources);
  // Without controls, the tokens the search likes best: forbidding them
  // must change something.
  runtime::BeamOptions plain;
  plain.beam = 4;
  plain.maxLen = 8;
  auto free = runtime::beamSearch(*model, src.ref(), plain);
  ASSERT_TRUE(bool(free)) << free.error();
  const std::vector<int32_t> &favourite = (*free)[0][0].tokens;
  ASSERT_GE(favourite.size(), 2u);
  std::vector<runtime::DecodingControls> cases(5);
  cases[0].noRepeatNgram = 2;
  cases[1].noRepeatNgram = 1;
  cases[2].forbidden = {{favourite[0]}, {favourite[1], favourite[0]}};
  cases[3].repetitionPenalty = 3;
  cases[4].noRepeatNgram = 3;
  cases[4].forbidden = {{favourite[1]}};
  cases[4].repetitionPenalty = 1.5;
  size_t changed = 0;
  for (int64_t beam : {int64_t(4), int64_t(1)}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("beam " + std::to_string(beam) + ", case " +
                   std::to_string(c));
      runtime::BeamOptions o = plain;
      o.beam = beam;
      o.nbest = beam == 4 ? 2 : 1;
      o.controls = cases[c];
      auto actual = runtime::beamSearch(*model, src.ref(), o);
      ASSERT_TRUE(bool(actual)) << actual.error();
      for (size_t s = 0; s < kSources.size(); ++s) {
        std::vector<runtime::Hypothesis> expected =
            referenceBeam(kSources[s], o);
        ASSERT_EQ((*actual)[s].size(), expected.size()) << "sentence " << s;
        for (size_t h = 0; h < expected.size(); ++h) {
          const std::vector<int32_t> &got = (*actual)[s][h].tokens;
          EXPECT_EQ(got, expected[h].tokens) << "sentence " << s;
          EXPECT_NEAR((*actual)[s][h].logProb, expected[h].logProb, 1e-4);
          changed += got != (*free)[s][0].tokens;
          for (const std::vector<int32_t> &seq : o.controls.forbidden)
            EXPECT_EQ(
                std::search(got.begin(), got.end(), seq.begin(), seq.end()),
                got.end());
          size_t n = size_t(o.controls.noRepeatNgram);
          for (size_t i = 0; n && i + n <= got.size(); ++i)
            for (size_t j = i + 1; j + n <= got.size(); ++j)
              EXPECT_FALSE(std::equal(got.begin() + i, got.begin() + i + n,
                                      got.begin() + j))
                  << "an n-gram at " << i << " and " << j;
        }
      }
    }
  }
  EXPECT_GT(changed, 0u) << "the controls changed no translation";

  // Refused, naming the control, before anything is decoded.
  for (auto [bad, what] :
       std::vector<std::pair<runtime::DecodingControls, std::string>>{
           {{-1.0, 0, {}}, "repetition penalty"},
           {{1.0, -2, {}}, "n-gram"},
           {{1.0, 0, {{}}}, "empty"},
           {{1.0, 0, {{3, 999}}}, "outside the vocabulary"}}) {
    runtime::BeamOptions o = plain;
    o.controls = bad;
    auto out = runtime::beamSearch(*model, src.ref(), o);
    ASSERT_FALSE(bool(out)) << what;
    EXPECT_NE(out.error().find(what), std::string::npos) << out.error();
  }
}

// A target prefix: every hypothesis starts with it, its tokens scored by
// their log-probabilities, and the search goes on from it as the reference
// does; a sentence without one in the same batch is unaffected. Controls
// do not touch the forced tokens.
TEST_F(DecodingTest, TargetPrefixesStartEveryHypothesis) {
  runtime::Tensor src = sources(kSources);
  std::vector<std::vector<int32_t>> prefixes = {{7, 7, 9}, {}, {12}};
  for (int64_t beam : {int64_t(4), int64_t(1)}) {
    for (bool controlled : {false, true}) {
      SCOPED_TRACE("beam " + std::to_string(beam) +
                   (controlled ? ", no-repeat 1" : ""));
      runtime::BeamOptions o;
      o.beam = beam;
      o.nbest = beam == 4 ? 3 : 1;
      o.maxLen = 8;
      if (controlled)
        o.controls.noRepeatNgram = 1; // would ban the second 7
      o.prefixes = prefixes;
      auto actual = runtime::beamSearch(*model, src.ref(), o);
      ASSERT_TRUE(bool(actual)) << actual.error();
      for (size_t s = 0; s < kSources.size(); ++s) {
        std::vector<runtime::Hypothesis> expected =
            referenceBeam(kSources[s], o, prefixes[s]);
        ASSERT_EQ((*actual)[s].size(), expected.size()) << "sentence " << s;
        for (size_t h = 0; h < expected.size(); ++h) {
          const std::vector<int32_t> &got = (*actual)[s][h].tokens;
          EXPECT_EQ(got, expected[h].tokens) << "sentence " << s;
          EXPECT_NEAR((*actual)[s][h].logProb, expected[h].logProb, 1e-4);
          ASSERT_GE(got.size(), prefixes[s].size());
          EXPECT_TRUE(
              std::equal(prefixes[s].begin(), prefixes[s].end(), got.begin()));
        }
      }
    }
  }
  // Refused: a prefix with no room left, a token outside the vocabulary, a
  // count that is not one per sentence.
  runtime::BeamOptions o;
  o.maxLen = 3;
  o.prefixes = {{7, 7, 9}, {}, {}};
  auto out = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_FALSE(bool(out));
  EXPECT_NE(out.error().find("leaves no room"), std::string::npos)
      << out.error();
  o.maxLen = 8;
  o.prefixes = {{7}, {999}, {}};
  out = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_FALSE(bool(out));
  EXPECT_NE(out.error().find("outside the vocabulary"), std::string::npos)
      << out.error();
  o.prefixes = {{7}};
  out = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_FALSE(bool(out));
  EXPECT_NE(out.error().find("1 target prefixes for 3"), std::string::npos)
      << out.error();
}

// The length penalty as len^alpha (CTranslate2's form; at alpha 1 the mean
// log-probability per token): the search ranks as the reference does, and
// the scores are the log-probabilities over the lengths.
TEST_F(DecodingTest, PowerLengthPenaltyMatchesTheReference) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.beam = 4;
  o.nbest = 3;
  o.maxLen = 7;
  o.alpha = 1;
  o.powerPenalty = true;
  auto actual = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_TRUE(bool(actual)) << actual.error();
  for (size_t s = 0; s < kSources.size(); ++s) {
    std::vector<runtime::Hypothesis> expected = referenceBeam(kSources[s], o);
    ASSERT_EQ((*actual)[s].size(), expected.size()) << "sentence " << s;
    for (size_t h = 0; h < expected.size(); ++h) {
      const runtime::Hypothesis &got = (*actual)[s][h];
      EXPECT_EQ(got.tokens, expected[h].tokens) << "sentence " << s;
      EXPECT_NEAR(got.score, expected[h].score, 1e-4);
      // eos counts in the length of a hypothesis that emitted it.
      double length = double(got.tokens.size()) +
                      (int64_t(got.tokens.size()) < o.maxLen ? 1 : 0);
      EXPECT_NEAR(got.score, got.logProb / length, 1e-9);
    }
  }
}

// Sampling draws each token from the row's tempered distribution, within
// its top-k and nucleus: the same seeds draw the same translations, and a
// sentence alone draws what it draws in the batch; other seeds draw others;
// top-k 1 is greedy; each token lies where it may, and the log-probability
// is the sum of the drawn tokens' own.
TEST_F(DecodingTest, SamplingIsSeededAndStaysInItsNucleus) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.beam = 1;
  o.maxLen = 8;
  o.sampling.on = true;
  o.sampling.temperature = 1.5;
  o.sampling.seeds = {11, 12, 13};
  auto draw = [&](const runtime::BeamOptions &with, const runtime::Tensor &s) {
    auto out = runtime::beamSearch(*model, s.ref(), with);
    EXPECT_TRUE(bool(out)) << out.error();
    std::vector<std::vector<int32_t>> tokens;
    for (auto &sentence : *out)
      tokens.push_back(sentence.at(0).tokens);
    return tokens;
  };
  std::vector<std::vector<int32_t>> first = draw(o, src);
  EXPECT_EQ(draw(o, src), first) << "the same seeds";
  for (size_t s = 0; s < kSources.size(); ++s) {
    runtime::BeamOptions alone = o;
    alone.sampling.seeds = {o.sampling.seeds[s]};
    EXPECT_EQ(draw(alone, sources({kSources[s]})).at(0), first[s])
        << "sentence " << s << " alone";
  }
  size_t differ = 0;
  for (uint64_t base : {100, 200, 300, 400}) {
    runtime::BeamOptions other = o;
    other.sampling.seeds = {base + 1, base + 2, base + 3};
    differ += draw(other, src) != first;
  }
  EXPECT_GT(differ, 0u) << "other seeds never drew otherwise";

  runtime::BeamOptions greedy;
  greedy.beam = 1;
  greedy.maxLen = 8;
  runtime::BeamOptions topOne = o;
  topOne.sampling.topK = 1;
  EXPECT_EQ(draw(topOne, src), draw(greedy, src)) << "top-k 1 is greedy";

  // Where each drawn token may lie, from the reference's log-probabilities.
  for (auto [topK, topP] :
       std::vector<std::pair<int64_t, double>>{{3, 1.0}, {0, 0.6}, {5, 0.5}}) {
    SCOPED_TRACE("top-k " + std::to_string(topK) + ", top-p " +
                 std::to_string(topP));
    runtime::BeamOptions nucleus = o;
    nucleus.sampling.topK = topK;
    nucleus.sampling.topP = topP;
    auto out = runtime::beamSearch(*model, src.ref(), nucleus);
    ASSERT_TRUE(bool(out)) << out.error();
    for (size_t s = 0; s < kSources.size(); ++s) {
      runtime::Tensor one = sources({kSources[s]});
      const runtime::Hypothesis &h = (*out)[s].at(0);
      std::vector<int32_t> prefix;
      double logProb = 0;
      std::vector<int32_t> steps = h.tokens;
      if (int64_t(steps.size()) < o.maxLen)
        steps.push_back(o.eos);
      for (int32_t token : steps) {
        std::vector<float> lp = nextLogProbs(one, prefix);
        std::vector<size_t> order(lp.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return lp[a] > lp[b]; });
        size_t allowed = topK > 0 ? size_t(topK) : lp.size();
        double total = 0, sum = 0;
        for (size_t c = 0; c < allowed; ++c)
          total += std::exp((lp[order[c]] - lp[order[0]]) / 1.5);
        size_t nucleusSize = 0;
        while (nucleusSize < allowed && sum < topP * total)
          sum += std::exp((lp[order[nucleusSize++]] - lp[order[0]]) / 1.5);
        size_t rank = std::find(order.begin(), order.end(), size_t(token)) -
                      order.begin();
        // A token a hair outside (float against double) is allowed for.
        EXPECT_LE(rank, nucleusSize) << "sentence " << s;
        logProb += lp[token];
        prefix.push_back(token);
      }
      EXPECT_NEAR(h.logProb, logProb, 1e-4) << "sentence " << s;
    }
  }

  for (auto [change, what] : std::vector<
           std::pair<std::function<void(runtime::BeamOptions &)>, std::string>>{
           {[](runtime::BeamOptions &b) { b.beam = 4; }, "beam 1"},
           {[](runtime::BeamOptions &b) { b.sampling.temperature = 0; },
            "temperature"},
           {[](runtime::BeamOptions &b) { b.sampling.topP = 0; }, "top-p"},
           {[](runtime::BeamOptions &b) { b.sampling.topP = 1.5; }, "top-p"},
           {[](runtime::BeamOptions &b) { b.sampling.topK = -1; }, "top-k"},
           {[](runtime::BeamOptions &b) { b.sampling.seeds = {1}; },
            "1 seeds for 3"}}) {
    runtime::BeamOptions bad = o;
    change(bad);
    auto out = runtime::beamSearch(*model, src.ref(), bad);
    ASSERT_FALSE(bool(out)) << what;
    EXPECT_NE(out.error().find(what), std::string::npos) << out.error();
  }
}

// The rule that lets a sentence leave the beam early: its n-best finished
// scores against the best score a live hypothesis could still reach.
TEST(BeamSettled, StopsOnlyWhenNoLiveHypothesisCanWin) {
  using runtime::beamSettled;
  // Log-probability alone: the best finished against the best live.
  EXPECT_TRUE(beamSettled({-2.0}, {-2.5, -3.0}, 1, 0.0, 10));
  EXPECT_TRUE(beamSettled({-2.0}, {-2.0}, 1, 0.0, 10)); // a tie cannot win
  EXPECT_FALSE(beamSettled({-2.0}, {-1.9, -3.0}, 1, 0.0, 10));
  // n-best: the n-th finished is what a live one must beat.
  EXPECT_FALSE(beamSettled({-2.0}, {-5.0}, 2, 0.0, 10));
  EXPECT_FALSE(beamSettled({-2.0, -4.0}, {-3.0}, 2, 0.0, 10));
  EXPECT_TRUE(beamSettled({-4.0, -2.0}, {-4.5}, 2, 0.0, 10));
  // A length penalty lets a live hypothesis divide by up to penalty(maxLen)
  // = (15 / 6)^0.6 = 1.733: -1.5 may still reach -0.866, -2.0 only -1.154.
  EXPECT_FALSE(beamSettled({-1.0}, {-1.5}, 1, 0.6, 10));
  EXPECT_TRUE(beamSettled({-1.0}, {-2.0}, 1, 0.6, 10));
  // ... and the longer it may grow, the more it may gain.
  EXPECT_FALSE(beamSettled({-1.0}, {-2.0}, 1, 0.6, 40));
  // A negative alpha favours short hypotheses without bound: never settled.
  EXPECT_FALSE(beamSettled({-1.0}, {-50.0}, 1, -0.5, 10));
  // Rows that can never win (-inf, a short beam's fill) bound nothing.
  double minusInf = -std::numeric_limits<double>::infinity();
  EXPECT_TRUE(beamSettled({-1.0}, {minusInf, minusInf}, 1, 0.6, 10));
}

// A sentence leaves the beam as soon as no live hypothesis can score above
// its n-best finished ones; the reference decodes on to maxLen. Both must
// return the same hypotheses, at every length penalty (0: log-probability
// alone, where a finished best hypothesis settles it at once) and n-best.
// Eos is made likely enough (its logit raised) that hypotheses end at
// different steps, some before better ones do: stopping once `beam` of them
// had ended (as beam search once did) returns worse ones here.
TEST_F(DecodingTest, BeamLeavingEarlyReturnsWhatWaitingWouldHave) {
  // Five sentences of three hypotheses: the 15 rows fit the 16 compiled.
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> rows;
  for (int s = 0; s < 5; ++s) {
    std::vector<int32_t> row(2 + rng() % 6);
    for (int32_t &id : row)
      id = 4 + int32_t(rng() % 28);
    row.push_back(3);
    rows.push_back(row);
  }
  size_t padded = 0;
  for (const auto &row : rows)
    padded = std::max(padded, row.size());
  for (auto &row : rows)
    row.resize(padded, 0);
  runtime::Tensor src = sources(rows);
  auto bias = model->getState("generator.bias");
  ASSERT_TRUE(bool(bias)) << bias.error();
  for (int64_t beam : {2, 3})
    for (float raise : {0.0f, 1.0f, 1.5f, 2.0f, 2.5f, 4.0f})
      for (double alpha : {0.0, 0.6, 2.0})
        for (int64_t nbest : {int64_t(1), beam}) {
          runtime::Tensor raised = test::hostTensor(DType::F32, bias->shape());
          std::copy(bias->f32(), bias->f32() + bias->numel(), raised.f32());
          raised.f32()[3] += raise;
          ASSERT_TRUE(model->setState("generator.bias", raised.ref()).ok());
          runtime::BeamOptions o;
          o.beam = beam;
          o.nbest = nbest;
          o.alpha = alpha;
          o.maxLen = 8;
          auto actual = runtime::beamSearch(*model, src.ref(), o);
          ASSERT_TRUE(bool(actual)) << actual.error();
          for (size_t s = 0; s < rows.size(); ++s) {
            std::vector<int32_t> row = rows[s];
            while (row.back() == 0)
              row.pop_back();
            std::vector<runtime::Hypothesis> expected = referenceBeam(row, o);
            std::string where = "beam " + std::to_string(beam) + " eos +" +
                                std::to_string(raise) + " alpha " +
                                std::to_string(alpha) + " nbest " +
                                std::to_string(nbest) + " sentence " +
                                std::to_string(s);
            ASSERT_EQ((*actual)[s].size(), expected.size()) << where;
            for (size_t h = 0; h < expected.size(); ++h) {
              EXPECT_EQ((*actual)[s][h].tokens, expected[h].tokens)
                  << where << " hypothesis " << h;
              EXPECT_NEAR((*actual)[s][h].score, expected[h].score, 1e-4)
                  << where;
            }
          }
        }
}

// The CPU keeps the weights of decoding packed between steps and batches;
// a parameter set through the session afterwards must be what the next
// decoding uses, exactly as in a session that had it from the start.
TEST_F(DecodingTest, DecodingAfterAParameterChangedUsesTheNewParameter) {
  runtime::Tensor src = sources(kSources);
  runtime::GreedyOptions greedy;
  greedy.maxLen = 8;
  greedy.stopAtEos = false;
  auto before = runtime::greedyDecode(*model, src.ref(), greedy);
  ASSERT_TRUE(bool(before)) << before.error();
  // The generator's weight, with its rows rotated: other tokens win.
  std::string name = "generator.weight";
  for (const char *tied : {"tgt_embed.weight", "src_embed.weight"})
    if (!model->state(name))
      name = tied;
  auto weight = model->getState(name);
  ASSERT_TRUE(bool(weight)) << weight.error();
  runtime::Tensor rotated = test::hostTensor(DType::F32, weight->shape());
  int64_t rows = weight->shape()[0], width = weight->shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    std::copy(weight->f32() + ((r + 1) % rows) * width,
              weight->f32() + ((r + 1) % rows + 1) * width,
              rotated.f32() + r * width);
  ASSERT_TRUE(model->setState(name, rotated.ref()).ok());
  auto after = runtime::greedyDecode(*model, src.ref(), greedy);
  ASSERT_TRUE(bool(after)) << after.error();
  EXPECT_NE(*after, *before);
  // A session that had these parameters from the start.
  auto fresh = test::cpuSession(model->program().executable(), 1);
  ASSERT_TRUE(fresh);
  ASSERT_TRUE(test::copyState(*model, *fresh));
  auto expected = runtime::greedyDecode(*fresh, src.ref(), greedy);
  ASSERT_TRUE(bool(expected)) << expected.error();
  EXPECT_EQ(*after, *expected);
}

// A minimum length refuses eos until then: with minLen = maxLen every
// hypothesis has exactly maxLen tokens, none of them eos.
TEST_F(DecodingTest, BeamRefusesEosBeforeTheMinimumLength) {
  runtime::Tensor src = sources(kSources);
  // The end token: the first sentence's best first token.
  runtime::GreedyOptions first;
  first.maxLen = 1;
  first.stopAtEos = false;
  first.eos = -1;
  auto favourite = runtime::greedyDecode(*model, src.ref(), first);
  ASSERT_TRUE(bool(favourite)) << favourite.error();
  runtime::BeamOptions o;
  o.beam = 3;
  o.nbest = 3;
  o.maxLen = o.minLen = 6;
  o.eos = (*favourite)[0].at(0);
  auto out = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_TRUE(bool(out)) << out.error();
  for (const std::vector<runtime::Hypothesis> &sentence : *out) {
    ASSERT_EQ(sentence.size(), 3u);
    for (const runtime::Hypothesis &h : sentence) {
      EXPECT_EQ(h.tokens.size(), 6u);
      EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), o.eos), 0);
    }
  }
}

// When the controls leave a hypothesis nothing to say (every token banned,
// eos included, or eos alone below the minimum length), the search ends the
// live hypotheses as they are, as at the length limit: each sentence still
// has its n best, and the banned row's NaN log-softmax (-inf less -inf) is
// not taken for an overflow.
TEST_F(DecodingTest, HypothesesWithNothingLeftToSayEndAsTheyAre) {
  runtime::Tensor src = sources(kSources);
  int64_t vocab = config.tgt_vocab();
  runtime::DecodingControls everything;
  for (int32_t token = 0; token < int32_t(vocab); ++token)
    everything.forbidden.push_back({token});
  runtime::DecodingControls allButEos = everything;
  allButEos.forbidden.erase(allButEos.forbidden.begin() + 3); // eos
  struct Case {
    const char *what;
    int64_t beam, nbest, minLen;
    bool scores, sampling;
    const runtime::DecodingControls *controls;
  };
  for (const Case &c : {
           Case{"beam 3, every token banned", 3, 2, 0, true, false,
                &everything},
           Case{"greedy, every token banned", 1, 1, 0, true, false,
                &everything},
           Case{"greedy on raw logits, every token banned", 1, 1, 0, false,
                false, &everything},
           Case{"sampling, every token banned", 1, 1, 0, true, true,
                &everything},
           Case{"beam 2, eos alone below the minimum", 2, 2, 3, true, false,
                &allButEos},
       }) {
    runtime::BeamOptions o;
    o.beam = c.beam;
    o.nbest = c.nbest;
    o.maxLen = 8;
    o.minLen = c.minLen;
    o.scores = c.scores;
    o.alpha = c.scores ? 0.6 : 0;
    o.controls = *c.controls;
    if (c.sampling) {
      o.sampling.on = true;
      o.sampling.seeds = {1, 2, 3};
    }
    auto out = runtime::beamSearch(*model, src.ref(), o);
    ASSERT_TRUE(bool(out)) << c.what << ": " << out.error();
    for (const std::vector<runtime::Hypothesis> &sentence : *out) {
      ASSERT_EQ(int64_t(sentence.size()), c.nbest) << c.what;
      EXPECT_TRUE(sentence[0].tokens.empty()) << c.what;
      EXPECT_EQ(sentence[0].logProb, 0) << c.what;
    }
  }
}

// The self-attention caches that @decode_step returns are its inputs with
// one position appended, and the program knows it; Session::run writes
// them into the room a caller gives only where that holds.
TEST_F(DecodingTest, CachesAppendInPlaceOnlyWhereTheStepAppends) {
  auto entry = model->program().entry("decode_step");
  ASSERT_TRUE(bool(entry)) << entry.error();
  int appending = 0;
  for (const runtime::Program::Value &output : (*entry)->outputs) {
    bool self = output.name.rfind("self_", 0) == 0;
    EXPECT_EQ(output.appendsTo >= 0, self) << output.name;
    if (self) {
      ++appending;
      EXPECT_EQ((*entry)->inputs[output.appendsTo].name, output.name);
    }
  }
  EXPECT_EQ(appending, 2 * config.decoder_layers());

  // One step of one sentence, by hand, with and without room.
  runtime::Tensor src = sources({kSources[0]});
  auto encoded = model->run("encode", {src.ref()});
  ASSERT_TRUE(bool(encoded)) << encoded.error();
  std::map<std::string, runtime::Tensor> state;
  std::map<std::string, runtime::Tensor> rooms;
  for (runtime::NamedTensor &t : *encoded) {
    std::vector<int64_t> room = {4, 1, 1, t.tensor.shape()[1],
                                 t.tensor.shape()[3]};
    rooms["self_" + t.name.substr(6)] = test::hostTensor(DType::F32, room);
    state[t.name] = std::move(t.tensor);
  }
  runtime::Tensor tokens = test::hostTensor(DType::I32, {1, 1});
  *static_cast<int32_t *>(tokens.data()) = 2;
  runtime::Tensor position = test::hostTensor(DType::I64, {});
  runtime::Tensor start = test::hostTensor(DType::I64, {1});
  auto inputsWith = [&](int64_t length) {
    std::vector<runtime::TensorRef> inputs;
    for (const std::string &name : model->inputNames("decode_step")) {
      if (rooms.count(name)) {
        runtime::TensorRef ref = rooms.at(name).ref();
        ref.shape[0] = length;
        inputs.push_back(ref);
      } else {
        inputs.push_back(name == "src"        ? src.ref()
                         : name == "tokens"   ? tokens.ref()
                         : name == "position" ? position.ref()
                         : name == "start"    ? start.ref()
                                              : state.at(name).ref());
      }
    }
    return inputs;
  };
  // Without room: the caches come back as new tensors. (A first run makes
  // the CPU pack the weights, which the two compared runs then share.)
  ASSERT_TRUE(bool(model->run("decode_step", inputsWith(0))));
  auto plain = model->run("decode_step", inputsWith(0));
  ASSERT_TRUE(bool(plain)) << plain.error();
  std::map<std::string, runtime::TensorRef> into;
  for (auto &[name, room] : rooms)
    into[name] = room.ref();
  auto appended = model->run("decode_step", inputsWith(0), into);
  ASSERT_TRUE(bool(appended)) << appended.error();
  ASSERT_EQ(appended->size(), 1u); // only log_probs comes back
  for (runtime::NamedTensor &t : *plain) {
    if (t.name == "log_probs") {
      EXPECT_EQ(0, std::memcmp(t.tensor.data(), (*appended)[0].tensor.data(),
                               t.tensor.bytes()));
      continue;
    }
    // Position 0 of the room holds what the plain step returned.
    EXPECT_EQ(0, std::memcmp(t.tensor.data(), rooms.at(t.name).data(),
                             t.tensor.bytes()))
        << t.name;
  }

  // Refused: an output that does not append, room that does not start at
  // the input, and room too small for the appended position.
  auto refused = [&](std::map<std::string, runtime::TensorRef> bad,
                     const std::string &part) {
    auto out = model->run("decode_step", inputsWith(1), bad);
    ASSERT_FALSE(bool(out)) << part;
    EXPECT_NE(out.error().find(part), std::string::npos) << out.error();
  };
  refused({{"log_probs", rooms.begin()->second.ref()}},
          "no output 'log_probs' that appends");
  runtime::TensorRef elsewhere = rooms.begin()->second.ref();
  elsewhere.data = static_cast<char *>(elsewhere.data) + 4;
  refused({{rooms.begin()->first, elsewhere}}, "elsewhere");
  runtime::TensorRef small = rooms.begin()->second.ref();
  small.shape[0] = 1;
  refused({{rooms.begin()->first, small}}, "needs room");
}

// A recycled output's memory takes a later run()'s output that fits (not
// cleared first: every element is written), one that does not fit or is
// far too large gets new memory, and the values are a fresh run's.
TEST_F(DecodingTest, RecycledOutputsTakeLaterOutputsThatFit) {
  runtime::Tensor src = sources({kSources[0], kSources[1]});
  auto first = model->run("encode", {src.ref()});
  ASSERT_TRUE(bool(first)) << first.error();
  auto again = model->run("encode", {src.ref()});
  ASSERT_TRUE(bool(again)) << again.error();
  ASSERT_FALSE(again->empty());
  runtime::Tensor &spare = again->front().tensor;
  const void *memory = spare.data();
  size_t capacity = spare.capacity();
  ASSERT_GE(capacity, size_t(spare.bytes()));
  // Garbage that the next run must overwrite.
  std::memset(spare.data(), 0xff, spare.bytes());
  model->recycle(std::move(spare));
  auto reused = model->run("encode", {src.ref()});
  ASSERT_TRUE(bool(reused)) << reused.error();
  bool took = false;
  for (size_t i = 0; i < reused->size(); ++i) {
    const runtime::Tensor &t = (*reused)[i].tensor;
    took |= t.data() == memory;
    EXPECT_EQ(0, std::memcmp(t.data(), (*first)[i].tensor.data(), t.bytes()))
        << (*reused)[i].name;
  }
  EXPECT_TRUE(took) << "no output took the recycled memory";

  // More than twice any output's size: it waits for an output of its own
  // size (the decoder's log-probabilities), and no output takes it.
  int64_t largest = 0;
  for (const runtime::NamedTensor &r : *reused)
    largest = std::max(largest, r.tensor.bytes());
  auto big = runtime::Tensor::onDevice(model->device(), DType::F32, {largest});
  ASSERT_TRUE(bool(big)) << big.error();
  const void *bigMemory = big->data();
  model->recycle(std::move(*big));
  auto passedOver = model->run("encode", {src.ref()});
  ASSERT_TRUE(bool(passedOver)) << passedOver.error();
  for (const runtime::NamedTensor &r : *passedOver)
    EXPECT_NE(r.tensor.data(), bigMemory)
        << r.name << " took a spare 4x its size";

  // Too small for any output: every output gets new memory.
  runtime::Tensor tiny = test::hostTensor(DType::F32, {1});
  ASSERT_TRUE(tiny.reuseAs(DType::I32, {1}));
  EXPECT_FALSE(tiny.reuseAs(DType::F32, {int64_t(capacity)}));
  EXPECT_EQ(tiny.dtype(), DType::I32);
}

TEST_F(DecodingTest, RefusesBadOptions) {
  runtime::Tensor src = sources(kSources);
  runtime::BeamOptions o;
  o.nbest = 5;
  auto out = runtime::beamSearch(*model, src.ref(), o);
  ASSERT_FALSE(bool(out));
  EXPECT_NE(out.error().find("nbest"), std::string::npos);
}

// A parameter finite itself (so the loaders take it) but overflowing f32
// inside the model makes @decode_step produce NaN for the sentences that
// use it. Decoding stops and names the first of them rather than rank NaN,
// which would decode such a sentence as token 0 or nothing at all.
TEST_F(DecodingTest, StopsWhenTheModelProducesNaN) {
  // Token 20 appears in the third source sentence only.
  runtime::Tensor *embed = model->state("src_embed.weight");
  ASSERT_TRUE(embed);
  int64_t width = embed->shape()[1];
  for (int64_t i = 0; i < width; ++i)
    embed->f32()[20 * width + i] = 3e38f;
  runtime::Tensor src = sources(kSources);
  // On the CPU both searches read the logits of @decode_step_logits.
  const std::string expected =
      "@decode_step_logits produced NaN in 'logits' for sentence 3 at step 1";

  runtime::GreedyOptions greedy;
  greedy.maxLen = 10;
  auto decoded = runtime::greedyDecode(*model, src.ref(), greedy);
  ASSERT_FALSE(bool(decoded));
  EXPECT_EQ(decoded.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(decoded.error().find(expected), std::string::npos)
      << decoded.error();

  for (int64_t beam : {1, 4}) {
    runtime::BeamOptions o;
    o.beam = beam;
    o.maxLen = 10;
    auto found = runtime::beamSearch(*model, src.ref(), o);
    ASSERT_FALSE(bool(found)) << "beam " << beam;
    EXPECT_EQ(found.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(found.error().find(expected), std::string::npos) << found.error();
    // Numbered as the caller numbers its sentences (lines of a file).
    o.sentenceNumbers = {10, 20, 30};
    found = runtime::beamSearch(*model, src.ref(), o);
    ASSERT_FALSE(bool(found));
    EXPECT_NE(found.error().find("for sentence 30 at step 1"),
              std::string::npos)
        << found.error();
  }

  // The other sentences still decode.
  runtime::Tensor rest = sources({kSources[0], kSources[1]});
  EXPECT_TRUE(bool(runtime::greedyDecode(*model, rest.ref(), greedy)));
  runtime::BeamOptions beam;
  beam.maxLen = 10;
  auto restFound = runtime::beamSearch(*model, rest.ref(), beam);
  EXPECT_TRUE(bool(restFound)) << restFound.error();
}

} // namespace
