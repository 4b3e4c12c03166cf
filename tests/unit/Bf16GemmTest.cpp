//===- Bf16GemmTest.cpp - Products of bf16 factors with f32 sums ----------===//
//
// bf16Gemm against the same products in double, for every transpose and for
// strided factors: the products of bf16 values are exact, so the only error
// is f32's in the sums, bounded by k * 2^-24 * sum |a||b| per element. On a
// CPU with AVX512-BF16 this is oneDNN's bf16 matmul; elsewhere the widened
// factors through sgemm. And the rounding itself: to nearest, ties to even,
// NaN kept, overflow to infinity, as the interpreter and generated kernels
// round.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Bf16Gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace loom::cpu;

namespace {

TEST(Bf16Gemm, RoundsToNearestEven) {
  EXPECT_EQ(floatFromBf16(bf16FromFloat(1.0f)), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(floatFromBf16(bf16FromFloat(1.0f + 1.0f / 256)), 1.0f);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: up.
  EXPECT_EQ(floatFromBf16(bf16FromFloat(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
  // Just above halfway rounds up.
  EXPECT_EQ(floatFromBf16(bf16FromFloat(1.0f + 1.0f / 256 + 1.0f / 4096)),
            1.0f + 1.0f / 128);
  EXPECT_EQ(floatFromBf16(bf16FromFloat(-2.5f)), -2.5f);
  EXPECT_TRUE(std::signbit(floatFromBf16(bf16FromFloat(-0.0f))));
  EXPECT_TRUE(std::isnan(
      floatFromBf16(bf16FromFloat(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(floatFromBf16(bf16FromFloat(std::numeric_limits<float>::max())),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(
      floatFromBf16(bf16FromFloat(-std::numeric_limits<float>::infinity())),
      -std::numeric_limits<float>::infinity());
  std::vector<float> values = {0.1f, -3.3f, 1e-30f}, rounded(3);
  roundThroughBf16(values.data(), 3, rounded.data());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(rounded[i], floatFromBf16(bf16FromFloat(values[i])));
}

TEST(Bf16Gemm, MatchesExactProductsForEveryLayout) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t m = 37, n = 29, k = 300, pad = 5;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "A^T" : "A") + (tb ? " B^T" : " B"));
      // Strided: each stored row `pad` elements longer than it needs.
      int64_t aRows = ta ? k : m, aCols = ta ? m : k;
      int64_t bRows = tb ? n : k, bCols = tb ? k : n;
      int64_t lda = aCols + pad, ldb = bCols + pad, ldc = n + pad;
      std::vector<uint16_t> a(size_t(aRows * lda)), b(size_t(bRows * ldb));
      for (uint16_t &x : a)
        x = bf16FromFloat(normal(rng));
      for (uint16_t &x : b)
        x = bf16FromFloat(normal(rng));
      std::vector<float> c(size_t(m * ldc), -7.0f);
      bf16Gemm(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
      auto at = [&](int64_t i, int64_t p) {
        return double(floatFromBf16(ta ? a[p * lda + i] : a[i * lda + p]));
      };
      auto bt = [&](int64_t p, int64_t j) {
        return double(floatFromBf16(tb ? b[j * ldb + p] : b[p * ldb + j]));
      };
      double worst = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            exact += at(i, p) * bt(p, j);
            magnitude += std::fabs(at(i, p) * bt(p, j));
          }
          double error = std::fabs(double(c[i * ldc + j]) - exact);
          ASSERT_LE(error, double(k) * std::ldexp(1.0, -24) * magnitude)
              << "element " << i << ", " << j;
          worst = std::max(worst, error / magnitude);
        }
      // The padding between rows of C is not written.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = n; j < ldc; ++j)
          ASSERT_EQ(c[i * ldc + j], -7.0f);
      // Far below bf16's own 2^-9: the sums are f32's, not bf16's.
      EXPECT_LT(worst, 1e-5);
    }
}

TEST(Bf16Gemm, EmptyContractionGivesZeros) {
  std::vector<uint16_t> a(1), b(1);
  std::vector<float> c(6, 3.0f);
  bf16Gemm(false, false, 2, 3, 0, a.data(), 1, b.data(), 3, c.data(), 3);
  for (float x : c)
    EXPECT_EQ(x, 0.0f);
}

} // namespace
