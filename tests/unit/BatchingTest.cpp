//===- BatchingTest.cpp - Token-budget batching ---------------------------===//

#include "text/Batching.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace loom::text;

namespace {

/// Lengths like a translation corpus: targets 1-60 tokens, sources within a
/// few tokens of their target.
std::vector<PairLengths> corpusLengths(size_t n, unsigned seed = 3) {
  std::mt19937 rng(seed);
  std::vector<PairLengths> pairs(n);
  for (PairLengths &p : pairs) {
    p.tgt = 1 + static_cast<int64_t>(rng() % 60);
    p.src = std::max<int64_t>(1, p.tgt + static_cast<int64_t>(rng() % 7) - 3);
  }
  return pairs;
}

/// Fails unless every pair is in exactly one batch and no batch is empty.
void expectPartition(const std::vector<Batch> &batches, size_t numPairs) {
  std::vector<int> seen(numPairs, 0);
  for (const Batch &batch : batches) {
    EXPECT_FALSE(batch.empty());
    for (int64_t index : batch) {
      ASSERT_GE(index, 0);
      ASSERT_LT(index, static_cast<int64_t>(numPairs));
      ++seen[index];
    }
  }
  for (size_t i = 0; i < numPairs; ++i)
    EXPECT_EQ(seen[i], 1) << "pair " << i;
}

/// Real tokens over padded tokens, counting sources and targets (each padded
/// to its own longest).
double realFraction(const std::vector<Batch> &batches,
                    const std::vector<PairLengths> &pairs) {
  int64_t real = 0, padded = 0;
  for (const Batch &batch : batches) {
    int64_t maxSrc = 0, maxTgt = 0;
    for (int64_t i : batch) {
      maxSrc = std::max(maxSrc, pairs[i].src);
      maxTgt = std::max(maxTgt, pairs[i].tgt);
      real += pairs[i].src + pairs[i].tgt;
    }
    padded += static_cast<int64_t>(batch.size()) * (maxSrc + maxTgt);
  }
  return static_cast<double>(real) / static_cast<double>(padded);
}

TEST(Batching, EveryPairExactlyOncePerEpoch) {
  std::vector<PairLengths> pairs = corpusLengths(5000);
  for (int64_t epoch = 0; epoch < 3; ++epoch)
    expectPartition(makeEpoch(pairs, 1000, 42, epoch), pairs.size());
  expectPartition(makeEpoch(pairs, 1000, 42, 0, /*maxBatch=*/16), pairs.size());
  expectPartition(makeSortedBatches(pairs, 1000), pairs.size());
  EXPECT_TRUE(makeEpoch({}, 1000, 42, 0).empty());
}

TEST(Batching, RespectsTheTokenBudgetAndBatchLimit) {
  std::vector<PairLengths> pairs = corpusLengths(5000);
  for (int64_t budget : {64, 300, 1000, 4096}) {
    std::vector<Batch> batches = makeEpoch(pairs, budget, 1, 0);
    for (const Batch &batch : batches)
      EXPECT_LE(paddedTokens(batch, pairs), budget) << "budget " << budget;
    // Greedy cutting fills batches: on average well over half the budget.
    int64_t total = 0;
    for (const Batch &batch : batches)
      total += paddedTokens(batch, pairs);
    EXPECT_GT(total, static_cast<int64_t>(batches.size()) * budget / 2)
        << "budget " << budget;
  }
  for (const Batch &batch : makeEpoch(pairs, 4096, 1, 0, /*maxBatch=*/32))
    EXPECT_LE(batch.size(), 32u);
}

TEST(Batching, PaddedSizeCountsTheLongerSide) {
  std::vector<PairLengths> pairs = {{10, 2}, {3, 4}, {5, 5}};
  EXPECT_EQ(paddedTokens({0, 1}, pairs), 20);
  EXPECT_EQ(paddedTokens({1, 2}, pairs), 10);
  // Sources count too: these two pairs (10 tokens each at most) only fit
  // one per batch in a budget of 15.
  std::vector<PairLengths> longSources = {{10, 1}, {10, 1}};
  EXPECT_EQ(makeEpoch(longSources, 15, 0, 0).size(), 2u);
  EXPECT_EQ(makeEpoch(longSources, 20, 0, 0).size(), 1u);
}

TEST(Batching, PairLongerThanTheBudgetIsABatchOfItsOwn) {
  std::vector<PairLengths> pairs = {{3, 3}, {50, 40}, {3, 4}, {2, 2}};
  std::vector<Batch> batches = makeEpoch(pairs, 20, 7, 0);
  expectPartition(batches, pairs.size());
  EXPECT_EQ(batches.size(), 2u);
  for (const Batch &batch : batches) {
    if (std::find(batch.begin(), batch.end(), 1) != batch.end()) {
      EXPECT_EQ(batch.size(), 1u);
    }
  }
}

TEST(Batching, SameSeedAndEpochGiveTheSameBatches) {
  std::vector<PairLengths> pairs = corpusLengths(3000);
  EXPECT_EQ(makeEpoch(pairs, 800, 9, 4), makeEpoch(pairs, 800, 9, 4));
  EXPECT_NE(makeEpoch(pairs, 800, 9, 4), makeEpoch(pairs, 800, 9, 5));
  EXPECT_NE(makeEpoch(pairs, 800, 9, 4), makeEpoch(pairs, 800, 10, 4));
  EXPECT_EQ(makeSortedBatches(pairs, 800), makeSortedBatches(pairs, 800));
}

TEST(Batching, EpochsShuffleTheOrderOfBatches) {
  std::vector<PairLengths> pairs = corpusLengths(3000);
  std::vector<Batch> a = makeEpoch(pairs, 800, 9, 0);
  std::vector<Batch> b = makeEpoch(pairs, 800, 9, 1);
  // The first batches of two epochs hold different pairs.
  EXPECT_NE(a.front(), b.front());
  // Not in length order: some batch is shorter than the one before it.
  auto longestTarget = [&](const Batch &batch) {
    int64_t longest = 0;
    for (int64_t i : batch)
      longest = std::max(longest, pairs[i].tgt);
    return longest;
  };
  bool descends = false;
  for (size_t i = 1; i < a.size(); ++i)
    descends |= longestTarget(a[i]) < longestTarget(a[i - 1]);
  EXPECT_TRUE(descends);
  // Equal-length pairs meet different partners in different epochs.
  auto partnersOf = [](const std::vector<Batch> &batches, int64_t pair) {
    for (Batch batch : batches)
      if (std::find(batch.begin(), batch.end(), pair) != batch.end()) {
        std::sort(batch.begin(), batch.end());
        return batch;
      }
    return Batch{};
  };
  int differing = 0;
  for (int64_t pair = 0; pair < 50; ++pair)
    differing += partnersOf(a, pair) != partnersOf(b, pair);
  EXPECT_GT(differing, 25);
}

TEST(Batching, GroupsSimilarLengths) {
  std::vector<PairLengths> pairs = corpusLengths(5000);
  std::vector<Batch> batches = makeEpoch(pairs, 2000, 5, 0);
  // Batches are runs of the length order: no pair outside a batch has a
  // target length strictly inside the batch's range.
  std::vector<int64_t> count(61, 0);
  for (const PairLengths &p : pairs)
    ++count[p.tgt];
  for (const Batch &batch : batches) {
    int64_t lo = 1000, hi = 0;
    for (int64_t i : batch) {
      lo = std::min(lo, pairs[i].tgt);
      hi = std::max(hi, pairs[i].tgt);
    }
    for (int64_t length = lo + 1; length < hi; ++length) {
      int64_t inBatch = 0;
      for (int64_t i : batch)
        inBatch += pairs[i].tgt == length;
      EXPECT_EQ(inBatch, count[length]) << "length " << length;
    }
  }
  // Little of a batch is padding, unlike batches of the same sizes drawn at
  // random.
  std::vector<int64_t> shuffled;
  for (const Batch &batch : batches)
    shuffled.insert(shuffled.end(), batch.begin(), batch.end());
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(1));
  std::vector<Batch> random;
  size_t next = 0;
  for (const Batch &batch : batches) {
    random.emplace_back(shuffled.begin() + next,
                        shuffled.begin() + next + batch.size());
    next += batch.size();
  }
  double grouped = realFraction(batches, pairs);
  EXPECT_GT(grouped, 0.85);
  EXPECT_GT(grouped, realFraction(random, pairs) + 0.2);
}

TEST(Batching, SortedBatchesAreDeterministicAndInLengthOrder) {
  std::vector<PairLengths> pairs = corpusLengths(500);
  std::vector<Batch> batches = makeSortedBatches(pairs, 400);
  int64_t previous = 0;
  for (const Batch &batch : batches)
    for (int64_t i : batch) {
      EXPECT_GE(pairs[i].tgt, previous);
      previous = pairs[i].tgt;
    }
}

} // namespace
