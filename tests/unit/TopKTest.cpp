//===- TopKTest.cpp - The best few scores of a row ------------------------===//
//
// topKOfRow against a full sort by the devices' order (higher first, ties by
// lower index, NaN below everything), on both of its paths (AVX2 and the
// baseline), over rows with many ties, -inf, NaN and lengths that are and are
// not multiples of eight.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/TopK.h"
#include "runtime/cpu/VecMath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using namespace loom;

namespace {

TEST(TopK, AgreesWithAFullSortOnEveryPath) {
  std::mt19937 rng(5);
  bool avx2 = cpu::avx2Enabled();
  for (bool useAvx2 : {false, true}) {
    if (useAvx2 && !avx2)
      continue;
    cpu::setAvx2Enabled(useAvx2);
    for (int64_t n : {1, 7, 8, 9, 64, 1001}) {
      for (int trial = 0; trial < 20; ++trial) {
        // Few distinct values make ties common; some NaN and -inf.
        std::uniform_int_distribution<int> pick(0, 12);
        std::vector<float> row(n);
        for (float &v : row) {
          int p = pick(rng);
          v = p == 0   ? std::numeric_limits<float>::quiet_NaN()
              : p == 1 ? -INFINITY
                       : float(p % 5) - 2.5f;
        }
        std::vector<int32_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
          return cpu::ranksAbove(row[a], row[b]);
        });
        for (int64_t k : {int64_t(1), int64_t(2), int64_t(8), n}) {
          if (k > n)
            continue;
          std::vector<float> values(k);
          std::vector<int32_t> indices(k, -1);
          cpu::topKOfRow(row.data(), n, k, values.data(), indices.data());
          for (int64_t j = 0; j < k; ++j) {
            ASSERT_EQ(indices[j], order[j])
                << "n " << n << ", k " << k << ", rank " << j
                << (useAvx2 ? " (AVX2)" : " (baseline)");
            float want = row[order[j]];
            ASSERT_TRUE(values[j] == want ||
                        (std::isnan(values[j]) && std::isnan(want)));
          }
        }
        ASSERT_EQ(cpu::argmaxOfRow(row.data(), n), order[0])
            << "argmax, n " << n << (useAvx2 ? " (AVX2)" : " (baseline)");
      }
    }
  }
  cpu::setAvx2Enabled(avx2);
}

// Rows with no number but -inf (and NaN) fall back to the scalar order; a
// row of numbers finds its maximum's first position wherever it lies.
TEST(TopK, ArgmaxOfRowsWithoutAFiniteBest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : {5, 40, 1003}) {
    std::vector<float> row(n, nan);
    EXPECT_EQ(cpu::argmaxOfRow(row.data(), n), 0) << n;
    row[n - 2] = -INFINITY;
    row[n - 1] = -INFINITY;
    EXPECT_EQ(cpu::argmaxOfRow(row.data(), n), n - 2) << n;
    row[n / 2] = INFINITY;
    row[n / 3] = INFINITY;
    EXPECT_EQ(cpu::argmaxOfRow(row.data(), n), n / 3) << n;
    for (int64_t i = 0; i < n; ++i)
      row[i] = float(i % 7);
    EXPECT_EQ(cpu::argmaxOfRow(row.data(), n), std::min<int64_t>(n - 1, 6))
        << n;
  }
}

} // namespace
