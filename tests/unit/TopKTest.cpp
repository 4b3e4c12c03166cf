//===- TopKTest.cpp - The best few scores of a row ------------------------===//
//
// topKOfRow against a full sort by the devices' order (higher first, ties by
// lower index, NaN below everything), on both of its paths (AVX2 and the
// baseline), over rows with many ties, -inf, NaN and lengths that are and are
// not multiples of eight; argmaxOfRow, and the CPU device's top-k of a
// row's log-softmax from its logits.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"

#include "runtime/Device.h"
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

// The CPU device's top-k of a row's log-softmax, read from its logits: the
// same tokens as the top-k of the logits, each less the row's log-sum-exp
// (held against one in double), and NaN where no log-softmax is a number.
TEST(TopK, LogSoftmaxFromLogits) {
  auto device = runtime::openDevice("cpu", 1);
  ASSERT_TRUE(bool(device)) << device.error();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const int64_t rows = 3, n = 1003, k = 6;
  runtime::Tensor logits = test::hostTensor(DType::F32, {rows, n});
  for (int64_t i = 0; i < rows * n; ++i)
    logits.f32()[i] = normal(rng);
  logits.f32()[n + 17] = -INFINITY; // exp of it is 0
  bool avx2 = cpu::avx2Enabled();
  for (bool useAvx2 : {false, avx2}) {
    cpu::setAvx2Enabled(useAvx2);
    auto plain = (*device)->topK(logits.ref(), k);
    auto top = (*device)->topKLogSoftmax(logits.ref(), k);
    ASSERT_TRUE(plain && top);
    EXPECT_EQ(top->indices, plain->indices);
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = logits.f32() + r * n;
      double max = *std::max_element(row, row + n), sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += std::exp(double(row[i]) - max);
      double lse = max + std::log(sum);
      for (int64_t c = 0; c < k; ++c)
        EXPECT_NEAR(top->values[r * k + c], plain->values[r * k + c] - lse,
                    1e-5)
            << "row " << r << " rank " << c;
    }
  }
  cpu::setAvx2Enabled(avx2);
  // A NaN anywhere, or no finite best, gives NaN, as a log-softmax would.
  logits.f32()[5] = NAN;
  logits.f32()[n + 3] = INFINITY;
  for (int64_t i = 0; i < n; ++i)
    logits.f32()[2 * n + i] = -INFINITY;
  auto top = (*device)->topKLogSoftmax(logits.ref(), k);
  ASSERT_TRUE(bool(top)) << top.error();
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_TRUE(std::isnan(top->values[r * k])) << "row " << r;
  EXPECT_FALSE(bool((*device)->topKLogSoftmax(logits.ref(), n + 1)));
}

} // namespace
