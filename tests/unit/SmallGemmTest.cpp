//===- SmallGemmTest.cpp - A linear layer's product for a few rows --------===//
//
// smallGemm, from the row-major weight and from its panels, against a
// product in double: every row count they take, widths that are and are not
// multiples of four rows of w and of a panel, depths with and without a tail
// past the last vector, with and without a pool. Each output is summed in
// one order: a row's result is bit for bit the same alone or among others,
// and however the pool splits the weight. The int8 product over panels is
// exact, codes at +-127 included, and so is that of rows shifted to u8
// against weights within +-63, or within +-127 through AVX512-VNNI where the
// CPU has it. All decline what they do not take.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/SmallGemm.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/VecMath.h"

#include "DeviceTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace loom;

namespace {

/// smallGemm from the row-major weight, or from its panels.
bool product(bool panels, const std::vector<float> &x,
             const std::vector<float> &w, int64_t m, int64_t n, int64_t k,
             float *y, cpu::ThreadPool *pool) {
  if (!panels)
    return cpu::smallGemm(x.data(), w.data(), m, n, k, y, pool);
  // NaN past the weight's rows: a panel's padding that were read would
  // show.
  std::vector<float> packed(cpu::panelFloats(n, k), NAN);
  cpu::packPanels(w.data(), n, k, packed.data());
  return cpu::smallGemmPanels(x.data(), packed.data(), m, n, k, y, pool);
}

/// The int8 codes' products over panels.
bool dots(const std::vector<int8_t> &x, const std::vector<int8_t> &w, int64_t m,
          int64_t n, int64_t k, int32_t *dot, cpu::ThreadPool *pool,
          bool unsignedRows = false) {
  std::vector<int8_t> packed(cpu::codePanelBytes(n, k), 99);
  cpu::packCodePanels(w.data(), n, k, packed.data());
  return cpu::smallGemmInt8Panels(x.data(), packed.data(), m, n, k, dot, pool,
                                  unsignedRows);
}

TEST(SmallGemm, MatchesAProductInDoubleForEveryRowCountAndShape) {
  if (!cpu::avx2Enabled())
    GTEST_SKIP() << "smallGemm runs on CPUs with AVX2";
  cpu::ThreadPool pool(2);
  for (bool panels : {false, true})
    for (int64_t m = 1; m <= cpu::kSmallGemmRows; ++m)
      for (int64_t n : {1, 3, 4, 7, 16, 17, 128, 1030})
        for (int64_t k : {1, 7, 8, 13, 128, 515})
          for (cpu::ThreadPool *p :
               {static_cast<cpu::ThreadPool *>(nullptr), &pool}) {
            std::vector<float> x = test::uniformFloats(m * k, 1),
                               w = test::uniformFloats(n * k, 2), y(m * n, NAN);
            ASSERT_TRUE(product(panels, x, w, m, n, k, y.data(), p));
            // NaN (an output never written) fails too. |terms| < 1: float
            // rounding over k terms stays well within k ulp.
            double worst = test::worstProductError(x, w, y, m, n, k);
            EXPECT_LE(worst, 1e-6 * k)
                << m << "x" << n << "x" << k << (p ? " pooled" : "")
                << (panels ? " panels" : "");
          }
}

TEST(SmallGemm, ARowsResultDoesNotDependOnTheRowsBesideItOrTheSplit) {
  if (!cpu::avx2Enabled())
    GTEST_SKIP() << "smallGemm runs on CPUs with AVX2";
  const int64_t n = 8003, k = 131;
  cpu::ThreadPool pool(2);
  std::vector<float> x = test::uniformFloats(cpu::kSmallGemmRows * k, 3),
                     w = test::uniformFloats(n * k, 4);
  for (bool panels : {false, true}) {
    std::vector<float> all(cpu::kSmallGemmRows * n);
    ASSERT_TRUE(
        product(panels, x, w, cpu::kSmallGemmRows, n, k, all.data(), nullptr));
    for (int64_t r = 0; r < cpu::kSmallGemmRows; ++r) {
      std::vector<float> row(x.begin() + r * k, x.begin() + (r + 1) * k),
          alone(n);
      ASSERT_TRUE(product(panels, row, w, 1, n, k, alone.data(), &pool));
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(alone[j], all[r * n + j])
            << "row " << r << ", output " << j << (panels ? " panels" : "");
    }
  }
}

TEST(SmallGemm, Int8DotsAreExactAtTheCodesExtremes) {
  if (!cpu::avx2Enabled())
    GTEST_SKIP() << "smallGemmInt8 runs on CPUs with AVX2";
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> edge(0, 3);
  cpu::ThreadPool pool(2);
  // Signed rows against weights up to +-127; unsigned rows (codes + 128)
  // against weights up to +-63, their limit with vpmaddubsw; and, where the
  // CPU has AVX512-VNNI, unsigned rows against weights up to +-127.
  struct Mode {
    const char *name;
    bool unsignedRows, vnni;
    int weightLimit;
  };
  const bool haveVnni = cpu::vnniEnabled();
  for (Mode mode :
       {Mode{"signed", false, false, 127}, Mode{"unsigned", true, false, 63},
        Mode{"unsigned, VNNI", true, true, 127}}) {
    if (mode.vnni && !haveVnni)
      continue;
    cpu::setVnniEnabled(mode.vnni);
    for (int64_t m = 1; m <= cpu::kSmallGemmRows; ++m)
      for (int64_t n : {1, 6, 8, 9, 4099})
        for (int64_t k : {1, 3, 4, 31, 32, 128, 515}) {
          // Many codes at their extremes, where a pair of products is
          // largest.
          auto draw = [&](int limit) {
            int e = edge(rng);
            return int8_t(e == 0   ? limit
                          : e == 1 ? -limit
                                   : std::uniform_int_distribution<int>(
                                         -limit, limit)(rng));
          };
          std::vector<int8_t> x(m * k), w(n * k);
          for (int8_t &v : x)
            v = draw(127);
          for (int8_t &v : w)
            v = draw(mode.weightLimit);
          std::vector<int8_t> rows = x;
          if (mode.unsignedRows)
            for (int8_t &v : rows)
              v = int8_t(uint8_t(v) ^ 0x80u); // v + 128 as u8
          std::vector<int32_t> dot(m * n, -1);
          ASSERT_TRUE(
              dots(rows, w, m, n, k, dot.data(), &pool, mode.unsignedRows));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              int64_t want = 0;
              for (int64_t q = 0; q < k; ++q)
                want +=
                    (int64_t(x[i * k + q]) + (mode.unsignedRows ? 128 : 0)) *
                    w[j * k + q];
              ASSERT_EQ(dot[i * n + j], want)
                  << m << "x" << n << "x" << k << " at " << i << ", " << j
                  << " (" << mode.name << ")";
            }
        }
  }
  cpu::setVnniEnabled(true);
}

TEST(SmallGemm, DeclinesWhatItDoesNotTake) {
  std::vector<float> x(8 * 8, 1), w(8 * 8, 1), y(8 * 8, -1);
  EXPECT_FALSE(cpu::smallGemm(x.data(), w.data(), cpu::kSmallGemmRows + 1, 8, 8,
                              y.data(), nullptr));
  EXPECT_FALSE(cpu::smallGemm(x.data(), w.data(), 0, 8, 8, y.data(), nullptr));
  bool avx2 = cpu::avx2Enabled();
  cpu::setAvx2Enabled(false);
  EXPECT_FALSE(cpu::smallGemm(x.data(), w.data(), 1, 8, 8, y.data(), nullptr));
  EXPECT_FALSE(product(true, x, w, 1, 8, 8, y.data(), nullptr));
  std::vector<int8_t> codes(8 * 8, 1);
  std::vector<int32_t> dot(8 * 8, -1);
  EXPECT_FALSE(dots(codes, codes, 1, 8, 8, dot.data(), nullptr));
  cpu::setAvx2Enabled(avx2);
  EXPECT_FALSE(
      product(true, x, w, cpu::kSmallGemmRows + 1, 8, 8, y.data(), nullptr));
  EXPECT_FALSE(dots(codes, codes, 0, 8, 8, dot.data(), nullptr));
  for (float v : y)
    EXPECT_EQ(v, -1);
  for (int32_t v : dot)
    EXPECT_EQ(v, -1);
}

} // namespace
