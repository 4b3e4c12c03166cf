//===- PackedGemmTest.cpp - Linear layers over weights packed once --------===//
//
// PackedWeights against a naive product: it packs a weight a training step
// wrote only on the second call with the same content version and any other
// on the first, whose product is then every later call's, gives the product
// of the new contents after a version changes, and the Session numbers state
// so that decoding after a parameter changed uses the new parameter.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/SmallGemm.h"
#include "runtime/Device.h"
#include "runtime/cpu/CpuFeatures.h"

#include "DeviceTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace loom;

namespace {

TEST(PackedWeights, ParsesTheNamesAnExecutableRecords) {
  EXPECT_EQ(*cpu::parseLinearPrecision(""), cpu::LinearPrecision::F32);
  EXPECT_EQ(*cpu::parseLinearPrecision("fp32"), cpu::LinearPrecision::F32);
  EXPECT_EQ(*cpu::parseLinearPrecision("int8"), cpu::LinearPrecision::Int8);
  EXPECT_EQ(*cpu::parseLinearPrecision("bf16"), cpu::LinearPrecision::BF16);
  auto bad = cpu::parseLinearPrecision("int4");
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(bad.code(), ErrorCode::Corrupt);
  EXPECT_EQ(bad.error(),
            "unknown linear precision 'int4' (fp32, int8 or bf16)");
}

TEST(PackedWeights, PacksContentsThatStayOnTheirFirstCall) {
  const int64_t n = 67, k = 131;
  std::vector<float> w = test::uniformFloats(n * k, 1);
  cpu::PackedWeights packed;
  for (int64_t m : {1, 5, 32}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    std::vector<float> x = test::uniformFloats(m * k, 2 + m), y(m * n, -7.0f);
    // Unnumbered contents are never packed.
    EXPECT_FALSE(packed.linear(x.data(), w.data(), 0, m, n, k, y.data()));
    EXPECT_EQ(y[0], -7.0f);
  }
  EXPECT_EQ(packed.packedBytes(), 0);
  // Version 5, loaded by the host: packed at once, and every row count
  // after reuses the copy.
  for (int64_t m : {3, 3, 1, 32, 3}) {
    SCOPED_TRACE("m = " + std::to_string(m));
    std::vector<float> x = test::uniformFloats(m * k, 20 + m), y(m * n, -7.0f);
    ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, m, n, k, y.data()));
    EXPECT_LT(test::worstProductError(x, w, y, m, n, k), 1e-4);
    EXPECT_GE(packed.packedBytes(), n * k * int64_t(sizeof(float)));
  }
}

TEST(PackedWeights, SpreadsRowsThatWouldShareCacheSets) {
  // Rows a multiple of 2 KiB long get a cache line more.
  EXPECT_EQ(cpu::spreadRowStride(512, 4), 528);
  EXPECT_EQ(cpu::spreadRowStride(1536, 4), 1552);
  EXPECT_EQ(cpu::spreadRowStride(2048, 4), 2064);
  EXPECT_EQ(cpu::spreadRowStride(1024, 2), 1056);
  EXPECT_EQ(cpu::spreadRowStride(2048, 1), 2112);
  // Any other keeps its length.
  for (int64_t stride : {256, 384, 768, 8000, 1000})
    EXPECT_EQ(cpu::spreadRowStride(stride, 4), stride);
  EXPECT_EQ(cpu::spreadRowStride(512, 2), 512);
  EXPECT_EQ(cpu::spreadRowStride(1024, 1), 1024);
  EXPECT_EQ(cpu::spreadRowStride(0, 4), 0);

  // Products over weights whose rows are spread (where this CPU's matmul
  // reads a plain layout), and one whose are not, are the naive ones, and
  // the same at every call.
  const int64_t m = cpu::kSmallGemmRows + 4;
  for (auto [n, k] :
       {std::pair<int64_t, int64_t>{512, 96}, {1536, 40}, {768, 96}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", k = " + std::to_string(k));
    std::vector<float> w = test::uniformFloats(n * k, 3);
    std::vector<float> x = test::uniformFloats(m * k, 4), y(m * n, -7.0f);
    cpu::PackedWeights packed;
    ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, m, n, k, y.data()));
    EXPECT_LT(test::worstProductError(x, w, y, m, n, k), 1e-4);
    std::vector<float> again(m * n, -7.0f);
    ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, m, n, k, again.data()));
    EXPECT_EQ(again, y);
  }
}

TEST(PackedWeights, PacksWhatAStepWroteOnTheSecondCall) {
  const int64_t m = cpu::kSmallGemmRows + 4, n = 67, k = 131;
  const uint64_t version = 5 | runtime::kWrittenByStep;
  std::vector<float> w = test::uniformFloats(n * k, 1);
  std::vector<float> x = test::uniformFloats(m * k, 9), y(m * n, -7.0f);
  cpu::PackedWeights packed;
  // First sight: the caller multiplies.
  EXPECT_FALSE(packed.linear(x.data(), w.data(), version, m, n, k, y.data()));
  EXPECT_EQ(y[0], -7.0f);
  EXPECT_EQ(packed.packedBytes(), 0);
  // Second: packed.
  ASSERT_TRUE(packed.linear(x.data(), w.data(), version, m, n, k, y.data()));
  EXPECT_LT(test::worstProductError(x, w, y, m, n, k), 1e-4);
  EXPECT_GE(packed.packedBytes(), n * k * int64_t(sizeof(float)));
}

// A few rows of such a weight stay with the caller on every call: panels
// made on the second call would sum in another order than the first. As
// many rows as the CPU gives the few-row products, and as many as an AVX2
// CPU does.
TEST(PackedWeights, LeavesAFewRowsOfWhatAStepWroteToTheCaller) {
  const int64_t n = 67, k = 131;
  const uint64_t version = 5 | runtime::kWrittenByStep;
  std::vector<float> w = test::uniformFloats(n * k, 1);
  for (int64_t chosen : {int64_t(-1), cpu::kSmallGemmRows}) {
    cpu::setSmallGemmRowsChosen(chosen);
    cpu::PackedWeights packed;
    for (int64_t m = 1; m <= cpu::smallGemmRowsChosen(); ++m) {
      std::vector<float> x = test::uniformFloats(m * k, 9), y(m * n, -7.0f);
      for (int call = 0; call < 3; ++call)
        EXPECT_FALSE(
            packed.linear(x.data(), w.data(), version, m, n, k, y.data()))
            << m << " rows, call " << call;
      EXPECT_EQ(y[0], -7.0f);
    }
    EXPECT_EQ(packed.packedBytes(), 0);
  }
  cpu::setSmallGemmRowsChosen(-1);
}

// At every precision the first call with a weight computes what the later
// calls compute, bit for bit.
TEST(PackedWeights, TheFirstCallComputesWhatLaterCallsDo) {
  const int64_t m = 7, n = 48, k = 64;
  std::vector<float> w = test::uniformFloats(n * k, 13),
                     x = test::uniformFloats(m * k, 14);
  for (cpu::LinearPrecision precision :
       {cpu::LinearPrecision::F32, cpu::LinearPrecision::Int8}) {
    cpu::PackedWeights packed;
    std::vector<float> first(m * n, -7.0f), later(m * n, -7.0f);
    ASSERT_TRUE(
        packed.linear(x.data(), w.data(), 3, m, n, k, first.data(), precision));
    for (int call = 0; call < 2; ++call) {
      ASSERT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, later.data(),
                                precision));
      EXPECT_EQ(later, first);
    }
  }
}

TEST(PackedWeights, ANewVersionDropsThePackedCopy) {
  const int64_t m = cpu::kSmallGemmRows + 4, n = 16, k = 24;
  const uint64_t byStep = runtime::kWrittenByStep;
  std::vector<float> w = test::uniformFloats(n * k, 3);
  std::vector<float> x = test::uniformFloats(m * k, 4), y(m * n);
  cpu::PackedWeights packed;
  EXPECT_FALSE(
      packed.linear(x.data(), w.data(), 1 | byStep, m, n, k, y.data()));
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 1 | byStep, m, n, k, y.data()));
  // New contents at the same address under a new number, as after a
  // training step: the old copy goes, and the new one is packed once seen
  // again.
  std::vector<float> changed = test::uniformFloats(n * k, 5);
  std::copy(changed.begin(), changed.end(), w.begin());
  EXPECT_FALSE(
      packed.linear(x.data(), w.data(), 2 | byStep, m, n, k, y.data()));
  EXPECT_EQ(packed.packedBytes(), 0);
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 2 | byStep, m, n, k, y.data()));
  EXPECT_LT(test::worstProductError(x, w, y, m, n, k), 1e-4);
  // Set by the host instead: packed at once.
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, y.data()));
  EXPECT_LT(test::worstProductError(x, w, y, m, n, k), 1e-4);
}

/// Symmetric per-row int8 codes and scale, as the packed path defines them.
std::vector<int> codesOf(const float *v, int64_t n, double &scale,
                         int limit = 127) {
  float peak = 0;
  for (int64_t i = 0; i < n; ++i)
    peak = std::max(peak, std::fabs(v[i]));
  scale = peak / float(limit);
  std::vector<int> codes(n);
  for (int64_t i = 0; i < n; ++i)
    codes[i] = peak > 0 ? int(std::nearbyint(v[i] * (float(limit) / peak))) : 0;
  return codes;
}

// int8: per-channel weight codes, per-row activation codes, an exact
// integer product, scaled back. The kernel must compute exactly that (up
// to float rounding of the scaling), and stay near the f32 product.
TEST(PackedWeights, Int8IsThePerRowPerChannelQuantizedProduct) {
  const int64_t m = 9, n = 40, k = 96;
  std::vector<float> w = test::uniformFloats(n * k, 11),
                     x = test::uniformFloats(m * k, 12);
  x[3 * k + 5] = 0; // zero rows and values quantize to 0
  std::fill(x.begin() + 7 * k, x.begin() + 8 * k, 0.0f);
  std::vector<float> y(m * n);
  cpu::PackedWeights packed;
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, y.data(),
                            cpu::LinearPrecision::Int8));
  int64_t int8Bytes = packed.packedBytes();
  double worstQuantized = 0, worstExact = 0, largest = 0;
  for (int64_t i = 0; i < m; ++i) {
    double sx;
    std::vector<int> qx = codesOf(x.data() + i * k, k, sx);
    for (int64_t j = 0; j < n; ++j) {
      double sw;
      // Weights in 7 bits where the CPU has no VNNI (PackedGemm.h).
      std::vector<int> qw =
          codesOf(w.data() + j * k, k, sw, cpu::int8WeightLimit());
      int64_t dot = 0;
      double exact = 0;
      for (int64_t p = 0; p < k; ++p) {
        dot += int64_t(qx[p]) * qw[p];
        exact += double(x[i * k + p]) * w[j * k + p];
      }
      double expected = double(dot) * sx * sw;
      worstQuantized =
          std::max(worstQuantized, std::fabs(expected - y[i * n + j]));
      worstExact = std::max(worstExact, std::fabs(exact - y[i * n + j]));
      largest = std::max(largest, std::fabs(exact));
    }
  }
  EXPECT_LT(worstQuantized, 1e-5 * largest);
  EXPECT_LT(worstExact, 0.02 * largest);
  // The f32 path's own copy is another entry: both precisions coexist.
  EXPECT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, y.data()));
  EXPECT_GT(packed.packedBytes(), int8Bytes);
}

// Up to kSmallGemmRows rows multiply the row-major codes directly
// (SmallGemm.h); their integer products are the packed product's, so each
// row's result is bit for bit what it is among nine rows, at every k (with
// and without a tail past 32 codes).
TEST(PackedWeights, Int8FewRowsAreTheManyRowsProduct) {
  // Panels for up to eight rows, whatever this CPU chooses.
  cpu::setSmallGemmRowsChosen(cpu::kSmallGemmRows);
  for (int64_t k : {96, 77, 5}) {
    const int64_t m = 9, n = 43;
    std::vector<float> w = test::uniformFloats(n * k, 15),
                       x = test::uniformFloats(m * k, 16);
    std::vector<float> many(m * n);
    cpu::PackedWeights packed;
    ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, m, n, k, many.data(),
                              cpu::LinearPrecision::Int8));
    for (int64_t rows = 1; rows <= cpu::kSmallGemmRows; ++rows) {
      std::vector<float> few(rows * n);
      ASSERT_TRUE(packed.linear(x.data(), w.data(), 5, rows, n, k, few.data(),
                                cpu::LinearPrecision::Int8));
      for (int64_t i = 0; i < rows * n; ++i)
        ASSERT_EQ(few[i], many[i]) << "k " << k << ", " << rows
                                   << " rows, element " << i;
    }
  }
  cpu::setSmallGemmRowsChosen(-1);
}

// The epilogue a product is given is applied to each row once, whichever way
// the rows are multiplied: f32 and int8 panels (a few rows), oneDNN's f32 and
// int8 products (more), bf16 where this CPU has it; and not at all where
// linear() leaves the product to its caller.
TEST(PackedWeights, AppliesTheEpilogueToEveryRowOnce) {
  cpu::setSmallGemmRowsChosen(cpu::kSmallGemmRows);
  struct Marks {
    int64_t n;
    std::vector<int> calls;
    static void apply(const void *context, int64_t row, float *y) {
      auto &marks = *static_cast<Marks *>(const_cast<void *>(context));
      ++marks.calls[row];
      for (int64_t j = 0; j < marks.n; ++j)
        y[j] += float(row + 1) * 1000.0f;
    }
  };
  std::vector<cpu::LinearPrecision> precisions = {cpu::LinearPrecision::F32,
                                                  cpu::LinearPrecision::Int8};
  std::vector<std::string> features = cpu::hostCpuFeatures();
  if (std::find(features.begin(), features.end(), "avx512bf16") !=
      features.end())
    precisions.push_back(cpu::LinearPrecision::BF16);
  const int64_t n = 40, k = 24;
  std::vector<float> w = test::uniformFloats(n * k, 21);
  for (cpu::LinearPrecision precision : precisions)
    for (int64_t m : {1, 5, 30}) {
      std::vector<float> x = test::uniformFloats(m * k, 22);
      std::vector<float> plain(m * n), finished(m * n);
      cpu::PackedWeights packed;
      ASSERT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, plain.data(),
                                precision));
      Marks marks{n, std::vector<int>(m, 0)};
      ASSERT_TRUE(packed.linear(x.data(), w.data(), 3, m, n, k, finished.data(),
                                precision, nullptr, {&Marks::apply, &marks}));
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_EQ(marks.calls[i], 1) << m << " rows, row " << i;
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(finished[i * n + j],
                    plain[i * n + j] + float(i + 1) * 1000.0f)
              << m << " rows, precision " << int(precision) << ", [" << i
              << ", " << j << "]";
      }
    }
  // A weight a step wrote, at a few rows: the caller multiplies, and
  // finishes the rows itself.
  std::vector<float> x = test::uniformFloats(2 * k, 23), y(2 * n);
  cpu::PackedWeights packed;
  Marks marks{n, std::vector<int>(2, 0)};
  EXPECT_FALSE(packed.linear(x.data(), w.data(), runtime::kWrittenByStep | 1, 2,
                             n, k, y.data(), cpu::LinearPrecision::F32, nullptr,
                             {&Marks::apply, &marks}));
  EXPECT_EQ(marks.calls, std::vector<int>(2, 0));
  cpu::setSmallGemmRowsChosen(-1);
}

// Rows with a NaN or an infinity cannot be scaled: the caller computes them
// in f32, so the value propagates as it would there.
TEST(PackedWeights, Int8LeavesNonFiniteRowsToTheCaller) {
  const int64_t m = 2, n = 8, k = 16;
  std::vector<float> w = test::uniformFloats(n * k, 13),
                     x = test::uniformFloats(m * k, 14);
  std::vector<float> y(m * n, -7.0f);
  cpu::PackedWeights packed;
  x[k + 3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(packed.linear(x.data(), w.data(), 4, m, n, k, y.data(),
                             cpu::LinearPrecision::Int8));
  x[k + 3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(packed.linear(x.data(), w.data(), 4, m, n, k, y.data(),
                             cpu::LinearPrecision::Int8));
  x[k + 3] = 0.5f;
  EXPECT_TRUE(packed.linear(x.data(), w.data(), 4, m, n, k, y.data(),
                            cpu::LinearPrecision::Int8));
}

// Two caches sharing their weights' copies (one translator's workers)
// multiply on two threads at once, as each would alone: bit for bit one
// cache's products, at a few rows (panels) and at many (a packed copy), at
// f32 and int8, while the copies are made; and they hold one copy between
// them.
TEST(PackedWeights, CachesSharingWeightsMultiplyAtOnceAsOneDoes) {
  const int64_t n = 67, k = 131;
  const std::vector<int64_t> rowCounts = {1, 3, cpu::kSmallGemmRows, 12, 32};
  std::vector<float> w = test::uniformFloats(n * k, 21);
  // Panels for up to eight rows, and for one (this CPU's choice with
  // AVX-512): the row counts between go to panels, and to packed copies.
  for (int64_t chosen : {int64_t(1), cpu::kSmallGemmRows})
    for (cpu::LinearPrecision precision :
         {cpu::LinearPrecision::F32, cpu::LinearPrecision::Int8}) {
      cpu::setSmallGemmRowsChosen(chosen);
      SCOPED_TRACE(
          std::string(precision == cpu::LinearPrecision::F32 ? "f32" : "int8") +
          ", panels up to " + std::to_string(chosen) + " rows");
      cpu::PackedWeights alone;
      std::vector<std::vector<float>> xs, expected;
      for (int64_t m : rowCounts) {
        xs.push_back(test::uniformFloats(m * k, 30 + m));
        expected.emplace_back(m * n);
        ASSERT_TRUE(alone.linear(xs.back().data(), w.data(), 9, m, n, k,
                                 expected.back().data(), precision));
      }

      cpu::PackedWeights first, second;
      second.shareWeightsOf(first);
      std::vector<std::string> failures[2];
      auto work = [&](cpu::PackedWeights &packed, int thread) {
        for (int round = 0; round < 20; ++round)
          for (size_t c = 0; c < rowCounts.size(); ++c) {
            // The two threads take the row counts in opposite orders, so
            // that each makes some of the copies the other then reads.
            size_t i = thread == 0 ? c : rowCounts.size() - 1 - c;
            int64_t m = rowCounts[i];
            std::vector<float> y(m * n, -7.0f);
            if (!packed.linear(xs[i].data(), w.data(), 9, m, n, k, y.data(),
                               precision) ||
                y != expected[i])
              failures[thread].push_back(std::to_string(m) + " rows, round " +
                                         std::to_string(round));
          }
      };
      std::thread other(work, std::ref(second), 1);
      work(first, 0);
      other.join();
      for (int t = 0; t < 2; ++t)
        EXPECT_TRUE(failures[t].empty())
            << "thread " << t << ": " << failures[t].size()
            << " products differ, first " << failures[t].front();
      EXPECT_EQ(first.packedBytes(), alone.packedBytes());
      EXPECT_EQ(second.packedBytes(), alone.packedBytes());
    }
  cpu::setSmallGemmRowsChosen(-1);
}

TEST(PackedWeights, BF16StaysWithinItsRounding) {
  const int64_t m = 5, n = 24, k = 64;
  std::vector<float> w = test::uniformFloats(n * k, 15),
                     x = test::uniformFloats(m * k, 16);
  std::vector<float> y(m * n);
  cpu::PackedWeights packed;
  std::vector<std::string> features = cpu::hostCpuFeatures();
  if (std::find(features.begin(), features.end(), "avx512bf16") ==
      features.end()) {
    // oneDNN has no bf16 product on this CPU (the device refuses bf16
    // executables here): the caller must compute in f32, every time.
    for (int call = 0; call < 3; ++call)
      EXPECT_FALSE(packed.linear(x.data(), w.data(), 6, m, n, k, y.data(),
                                 cpu::LinearPrecision::BF16));
    return;
  }
  ASSERT_TRUE(packed.linear(x.data(), w.data(), 6, m, n, k, y.data(),
                            cpu::LinearPrecision::BF16));
  // Each operand off by at most 2^-9 of itself: the error is at most
  // about 2^-8 of sum |x| |w|.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        exact += double(x[i * k + p]) * w[j * k + p];
        magnitude += std::fabs(double(x[i * k + p]) * w[j * k + p]);
      }
      EXPECT_LE(std::fabs(exact - y[i * n + j]), magnitude / 256 + 1e-6);
    }
  EXPECT_GT(test::worstProductError(x, w, y, m, n, k), 0.0)
      << "not rounded to bf16";
}

} // namespace
