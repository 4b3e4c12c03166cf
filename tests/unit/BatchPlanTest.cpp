//===- BatchPlanTest.cpp - Sentences sorted by length into batches --------===//

#include "api/BatchPlan.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace loom;

namespace {

TEST(BatchPlan, BySentences) {
  std::vector<int64_t> lengths = {2, 3, 3, 5, 8, 9, 9};
  EXPECT_EQ(planBatches(lengths, 3, 0), (std::vector<size_t>{0, 3, 6}));
  EXPECT_EQ(planBatches(lengths, 100, 0), (std::vector<size_t>{0}));
  EXPECT_EQ(planBatches({}, 3, 0), (std::vector<size_t>{}));
}

TEST(BatchPlan, ByTokensCountingPadding) {
  std::vector<int64_t> lengths = {2, 3, 3, 5, 8, 9, 9};
  // Within 10: {2, 3, 3} (3 x 3 = 9; with the 5, 4 x 5 = 20), then each
  // alone (5 and 8: 2 x 8 = 16).
  EXPECT_EQ(planBatches(lengths, 100, 10),
            (std::vector<size_t>{0, 3, 4, 5, 6}));
  // Within 18: {2, 3, 3}, {5, 8} (2 x 8 = 16), {9, 9} (2 x 9 = 18).
  EXPECT_EQ(planBatches(lengths, 100, 18), (std::vector<size_t>{0, 3, 5}));
  // The sentence cap still holds under a budget.
  EXPECT_EQ(planBatches(lengths, 2, 1000), (std::vector<size_t>{0, 2, 4, 6}));
}

TEST(BatchPlan, ASentenceLongerThanTheBudgetIsABatchAlone) {
  EXPECT_EQ(planBatches({4, 50, 60}, 8, 10), (std::vector<size_t>{0, 1, 2}));
}

TEST(BatchPlan, EveryBatchWithinItsBudget) {
  std::vector<int64_t> lengths;
  for (int i = 0; i < 500; ++i)
    lengths.push_back(1 + (i * 37) % 61);
  std::sort(lengths.begin(), lengths.end());
  for (int64_t budget : {1, 60, 61, 128, 1000, 4096}) {
    SCOPED_TRACE(budget);
    std::vector<size_t> starts = planBatches(lengths, 32, budget);
    starts.push_back(lengths.size());
    for (size_t b = 0; b + 1 < starts.size(); ++b) {
      size_t n = starts[b + 1] - starts[b];
      ASSERT_GE(n, 1u);
      EXPECT_LE(n, 32u);
      if (n > 1) {
        EXPECT_LE(int64_t(n) * lengths[starts[b + 1] - 1], budget);
      }
      // Greedy: the next sentence would not have fitted.
      if (starts[b + 1] < lengths.size() && n < 32) {
        EXPECT_GT(int64_t(n + 1) * lengths[starts[b + 1]], budget);
      }
    }
  }
}

} // namespace
