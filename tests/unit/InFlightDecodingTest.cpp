//===- InFlightDecodingTest.cpp - Sentences joining a running search ------===//
//
// In-flight batching: sentences join a beam search between its steps, as
// others leave (BeamOptions::join), each at the caches' length then, with
// the positions before it masked out of its self-attention and its source
// and cross-attention K/V padded to the batch's. Every sentence must decode
// as it does alone: the same tokens, log-probabilities to float rounding,
// the same alignments, prefixes and draws, whatever joined around it.
//
//===----------------------------------------------------------------------===//

#include "runtime/DecoderState.h"
#include "runtime/Decoding.h"

#include "DecodingFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace loom;

namespace {

using InFlightDecodingTest = test::DecodingFixture;

// Of several lengths: later sentences are longer than the first, so
// joining widens the batch's sources.
const std::vector<std::vector<int32_t>> kSources = {
    {12, 4, 3},
    {5, 9, 11, 7, 3},
    {8, 8, 20, 17, 6, 13, 3},
    {6, 3},
    {9, 14, 10, 21, 5, 3},
    {7, 7, 3},
    {4, 15, 16, 9, 3},
    {22, 5, 18, 11, 12, 19, 4, 3}};

/// Per sentence, what it decodes to alone with `options`.
std::vector<runtime::Hypothesis> alone(test::DecodingFixture &f,
                                       runtime::Session &model, size_t s,
                                       runtime::BeamOptions options) {
  runtime::Tensor src = test::idsOf({kSources[s]});
  if (!options.prefixes.empty())
    options.prefixes = {options.prefixes[s]};
  if (options.sampling.on)
    options.sampling.seeds = {options.sampling.seeds[s]};
  auto found = runtime::beamSearch(model, src.ref(), options);
  EXPECT_TRUE(bool(found)) << found.error();
  (void)f;
  return found ? (*found)[0] : std::vector<runtime::Hypothesis>{};
}

/// Decodes kSources in searches that sentences join, at most `perJoin` at
/// a time and `maxSentences` together, each search started by the next
/// sentence not decoded once the one before has ended (as a server's
/// worker does); per sentence its n-best, from options.finished.
std::map<int64_t, std::vector<runtime::Hypothesis>>
inFlight(runtime::Session &model, runtime::BeamOptions options,
         int64_t maxSentences, int64_t perJoin) {
  std::vector<std::vector<int32_t>> prefixes = options.prefixes;
  std::vector<uint64_t> seeds = options.sampling.seeds;
  std::map<int64_t, std::vector<runtime::Hypothesis>> found;
  size_t next = 0;
  options.maxSentences = maxSentences;
  int searches = 0;
  while (next < kSources.size()) {
    ++searches;
    // The sentences of this search, by their index in it.
    std::vector<size_t> ofSearch = {next};
    runtime::BeamOptions o = options;
    if (!prefixes.empty())
      o.prefixes = {prefixes[next]};
    if (o.sampling.on)
      o.sampling.seeds = {seeds[next]};
    runtime::Tensor first = test::idsOf({kSources[next]});
    ++next;
    o.join = [&](int64_t room) -> ErrorOr<runtime::JoiningSentences> {
      EXPECT_GE(room, 1);
      runtime::JoiningSentences more;
      std::vector<std::vector<int32_t>> rows;
      while (next < kSources.size() && int64_t(rows.size()) < room &&
             int64_t(rows.size()) < perJoin) {
        rows.push_back(kSources[next]);
        more.maxLens.push_back(options.maxLen);
        more.sentenceNumbers.push_back(int64_t(next) + 1);
        if (!prefixes.empty())
          more.prefixes.push_back(prefixes[next]);
        if (!seeds.empty())
          more.seeds.push_back(seeds[next]);
        ofSearch.push_back(next++);
      }
      if (!rows.empty())
        more.src = test::idsOf(rows);
      return more;
    };
    o.finished = [&](int64_t sentence, std::vector<runtime::Hypothesis> nbest) {
      int64_t s = int64_t(ofSearch.at(size_t(sentence)));
      EXPECT_FALSE(found.count(s)) << "sentence " << s;
      found[s] = std::move(nbest);
    };
    auto returned = runtime::beamSearch(model, first.ref(), o);
    EXPECT_TRUE(bool(returned)) << returned.error();
    if (!returned)
      break;
  }
  // Sentences joined: fewer searches than sentences.
  EXPECT_LT(searches, int(kSources.size()));
  return found;
}

void expectSame(const std::vector<runtime::Hypothesis> &expected,
                const std::vector<runtime::Hypothesis> &actual,
                const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t h = 0; h < expected.size(); ++h) {
    EXPECT_EQ(actual[h].tokens, expected[h].tokens) << what << " #" << h;
    EXPECT_NEAR(actual[h].logProb, expected[h].logProb, 1e-4)
        << what << " #" << h;
    EXPECT_NEAR(actual[h].score, expected[h].score, 1e-4) << what << " #" << h;
    EXPECT_EQ(actual[h].alignment, expected[h].alignment) << what << " #" << h;
  }
}

TEST_F(InFlightDecodingTest, JoiningSentencesDecodeAsTheyDoAlone) {
  ASSERT_TRUE(runtime::DecoderState::canJoin(*model));
  struct Case {
    const char *name;
    runtime::BeamOptions options;
  };
  std::vector<Case> cases;
  runtime::BeamOptions beam4;
  beam4.beam = 4;
  beam4.nbest = 2;
  beam4.maxLen = 12;
  cases.push_back({"beam 4", beam4});
  runtime::BeamOptions greedy;
  greedy.beam = 1;
  greedy.alpha = 0;
  greedy.maxLen = 12;
  cases.push_back({"beam 1", greedy});
  runtime::BeamOptions aligned = beam4;
  aligned.alignments = true;
  cases.push_back({"alignments", aligned});
  runtime::BeamOptions prefixed = beam4;
  prefixed.prefixes.assign(kSources.size(), {});
  prefixed.prefixes[3] = {7, 9};
  prefixed.prefixes[5] = {11};
  cases.push_back({"prefixes", prefixed});
  runtime::BeamOptions sampled = greedy;
  sampled.sampling.on = true;
  sampled.sampling.topK = 0;
  sampled.sampling.temperature = 1.5;
  for (size_t s = 0; s < kSources.size(); ++s)
    sampled.sampling.seeds.push_back(1000 + s);
  cases.push_back({"sampling", sampled});
  runtime::BeamOptions controlled = beam4;
  controlled.controls.noRepeatNgram = 2;
  controlled.minLen = 3;
  cases.push_back({"controls", controlled});

  for (const Case &c : cases) {
    std::vector<std::vector<runtime::Hypothesis>> expected;
    for (size_t s = 0; s < kSources.size(); ++s)
      expected.push_back(alone(*this, *model, s, c.options));
    // One at a time into a batch of two (each joins as another leaves),
    // and three at a time into a batch of four (16 rows at beam 4, what
    // the executable takes).
    for (auto [maxSentences, perJoin] :
         {std::pair<int64_t, int64_t>{2, 1}, {4, 3}}) {
      auto found = inFlight(*model, c.options, maxSentences, perJoin);
      ASSERT_EQ(found.size(), kSources.size()) << c.name;
      for (size_t s = 0; s < kSources.size(); ++s)
        expectSame(expected[s], found[int64_t(s)],
                   std::string(c.name) + ", batch of " +
                       std::to_string(maxSentences) + ", sentence " +
                       std::to_string(s));
    }
  }
}

// What a caller hands the search must add up: a sentence count of the
// source, limits and numbers; a join beyond the room is refused.
TEST_F(InFlightDecodingTest, RefusesJoinsThatDoNotAddUp) {
  runtime::BeamOptions o;
  o.beam = 2;
  o.maxLen = 8;
  o.maxSentences = 2;
  o.join = [&](int64_t) -> ErrorOr<runtime::JoiningSentences> {
    runtime::JoiningSentences more;
    more.src = test::idsOf({kSources[1], kSources[2]});
    more.maxLens = {8}; // one limit for two sentences
    more.sentenceNumbers = {2, 3};
    return more;
  };
  runtime::Tensor first = test::idsOf({kSources[0]});
  auto found = runtime::beamSearch(*model, first.ref(), o);
  ASSERT_FALSE(bool(found));
  EXPECT_EQ(found.code(), ErrorCode::Internal);
  // A join callback's own error ends the search with it.
  o.join = [&](int64_t) -> ErrorOr<runtime::JoiningSentences> {
    return Status::failure("no more", ErrorCode::NotFound);
  };
  found = runtime::beamSearch(*model, first.ref(), o);
  ASSERT_FALSE(bool(found));
  EXPECT_NE(found.error().find("no more"), std::string::npos);
}

} // namespace
