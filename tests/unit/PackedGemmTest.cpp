//===- PackedGemmTest.cpp - Linear layers over weights packed once --------===//
//
// PackedWeights against a naive product: it packs a weight only on the
// second call with the same content version, gives the product of the new
// contents after a version changes, and the Session numbers state so that
// decoding after a parameter changed uses the new parameter.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/PackedGemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace loom;

namespace {

std::vector<float> randomVector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// The largest difference between y and x . w^T (y is [m, n]).
double worstError(const std::vector<float> &x, const std::vector<float> &w,
                  const std::vector<float> &y, int64_t m, int64_t n,
                  int64_t k) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(x[i * k + p]) * double(w[j * k + p]);
      worst = std::max(worst, std::fabs(s - y[i * n + j]));
    }
  return worst;
}

TEST(PackedWeights, PacksOnTheSecondCallWithTheSameVersion) {
  const int64_t n = 67, k = 131;
  std::vector<float> w = randomVector(n * k, 1);
  cpu::PackedWeights packed;
  for (int64_t m : {1, 5, 32}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    std::vector<float> x = randomVector(m * k, 2 + m), y(m * n, -7.0f);
    // Unnumbered contents are never packed.
    EXPECT_FALSE(packed.linear(x.data(), w.data(), 0, m, n, k, y.data()));
    EXPECT_EQ(y[0], -7.0f);
  }
  std::vector<float> x = randomVector(3 * k, 9), y(3 * n, -7.0f);
  // First sight of version 5: the caller multiplies.
  EXPECT_FALSE(packed.linear(x.data(), w.data(), 5, 3, n, k, y.data()));
  EXPECT_EQ(y[0], -7.0f);
  EXPECT_EQ(packed.packedBytes(), 0);
  // Second: packed, and every row count after reuses the copy.
  for (int64_t m : {3, 1, 32, 3}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    x = randomVector(m * k, 20 + m);
    y.assign(m * n, -7.0f);
    ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, m, n, k, y.data()));
    EXPECT_LT(worstError(x, w, y, m, n, k), 1e-4);
    EXPECT_GE(packed.packedBytes(), n * k * int64_t(sizeof(float)));
  }
}

TEST(PackedWeights, ANewVersionDropsThePackedCopy) {
  const int64_t m = 4, n = 16, k = 24;
  std::vector<float> w = randomVector(n * k, 3);
  std::vector<float> x = randomVector(m * k, 4), y(m * n);
  cpu::PackedWeights packed;
  EXPECT_FALSE(packed.linear(x.data(), w.data(), 1, m, n, k, y.data()));
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 1, m, n, k, y.data()));
  // New contents at the same address under a new number, as after a
  // training step: the old copy goes, and the new one is packed once seen
  // again.
  std::vector<float> changed = randomVector(n * k, 5);
  std::copy(changed.begin(), changed.end(), w.begin());
  EXPECT_FALSE(packed.linear(x.data(), w.data(), 2, m, n, k, y.data()));
  EXPECT_EQ(packed.packedBytes(), 0);
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 2, m, n, k, y.data()));
  EXPECT_LT(worstError(x, w, y, m, n, k), 1e-4);
}

} // namespace
