//===- SmallGemm.cpp - A linear layer's product for a few rows ------------===//

#include "runtime/cpu/SmallGemm.h"
#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/VecMath.h"

#if LOOM_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>

using namespace loom::cpu;

namespace {

#if LOOM_HAVE_AVX2_PATH

/// Four sums of eight lanes each, as four floats: [sum a, sum b, sum c,
/// sum d]. The lanes are added in one fixed order.
LOOM_TARGET_AVX2 inline __m128 sumsOf4(__m256 a, __m256 b, __m256 c,
                                       __m256 d) {
  __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
  __m256 abcd = _mm256_hadd_ps(ab, cd);
  return _mm_add_ps(_mm256_castps256_ps128(abcd),
                    _mm256_extractf128_ps(abcd, 1));
}

/// The tail of a dot product past the last whole vector of k.
inline float tailDot(const float *x, const float *w, int64_t from, int64_t k) {
  float sum = 0;
  for (int64_t i = from; i < k; ++i)
    sum += x[i] * w[i];
  return sum;
}

/// y[r, j..j+3] for R (one or two) rows of x from x and four rows of w
/// from w0, each output a dot product in lanes of 8, then the tail: eight
/// accumulators, four rows of w and a row of x stay in sixteen registers.
template <int R>
LOOM_TARGET_AVX2 inline void fourOutputs(const float *x, const float *w0,
                                         int64_t n, int64_t k, float *y) {
  const int64_t whole = k & ~int64_t(7);
  const float *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 4; ++c)
      acc[r][c] = _mm256_setzero_ps();
  for (int64_t i = 0; i < whole; i += 8) {
    __m256 v0 = _mm256_loadu_ps(w0 + i), v1 = _mm256_loadu_ps(w1 + i),
           v2 = _mm256_loadu_ps(w2 + i), v3 = _mm256_loadu_ps(w3 + i);
    for (int r = 0; r < R; ++r) {
      __m256 xr = _mm256_loadu_ps(x + r * k + i);
      acc[r][0] = _mm256_fmadd_ps(v0, xr, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(v1, xr, acc[r][1]);
      acc[r][2] = _mm256_fmadd_ps(v2, xr, acc[r][2]);
      acc[r][3] = _mm256_fmadd_ps(v3, xr, acc[r][3]);
    }
  }
  for (int r = 0; r < R; ++r) {
    __m128 sums = sumsOf4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    if (whole < k) {
      const float *xr = x + r * k;
      sums = _mm_add_ps(sums, _mm_setr_ps(tailDot(xr, w0, whole, k),
                                          tailDot(xr, w1, whole, k),
                                          tailDot(xr, w2, whole, k),
                                          tailDot(xr, w3, whole, k)));
    }
    _mm_storeu_ps(y + r * n, sums);
  }
}

/// Rows [begin, end) of y for m rows of x: four rows of w at a time against
/// two rows of x at a time (the four rows of w stay in the first level
/// cache for the second pair). A row of w past the last four sums in the
/// same order as one among four.
LOOM_TARGET_AVX2 void rowsOfY(const float *x, const float *w, int64_t m,
                              int64_t n, int64_t k, float *y, int64_t begin,
                              int64_t end) {
  const int64_t whole = k & ~int64_t(7);
  int64_t j = begin;
  for (; j + 4 <= end; j += 4) {
    int64_t r = 0;
    for (; r + 2 <= m; r += 2)
      fourOutputs<2>(x + r * k, w + j * k, n, k, y + r * n + j);
    if (r < m)
      fourOutputs<1>(x + r * k, w + j * k, n, k, y + r * n + j);
  }
  for (; j < end; ++j) {
    const float *wj = w + j * k;
    for (int64_t r = 0; r < m; ++r) {
      const float *xr = x + r * k;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t i = 0; i < whole; i += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(wj + i),
                              _mm256_loadu_ps(xr + i), acc);
      __m256 zero = _mm256_setzero_ps();
      float sum = _mm_cvtss_f32(sumsOf4(acc, zero, zero, zero));
      y[r * n + j] = sum + tailDot(xr, wj, whole, k);
    }
  }
}

#endif

/// Rows of w per parallel chunk: about 64K multiply-adds, so that a 128 x
/// 128 weight is one chunk and the generator's 8000 rows are many.
int64_t rowGrain(int64_t k) {
  return std::max<int64_t>(4, ((int64_t(1) << 16) / std::max<int64_t>(k, 1) + 3) &
                                  ~int64_t(3));
}

#if LOOM_HAVE_AVX2_PATH
/// body(begin, end) over rows [0, n) of w in chunks of `grain` (a multiple
/// of four) split over `pool`: chunks start at multiples of four rows, so an
/// output's order of summation does not depend on how the pool split them.
template <typename F>
void overRowChunks(ThreadPool *pool, int64_t n, int64_t grain, F &&body) {
  int64_t chunks = (n + grain - 1) / grain;
  parallelRange(pool, chunks, 1, [&](int64_t first, int64_t last) {
    body(first * grain, std::min(n, last * grain));
  });
}
#endif

} // namespace

namespace {
std::atomic<int64_t> rowsChosen{-1}; // negative: the CPU's choice
} // namespace

int64_t loom::cpu::smallGemmRowsChosen() {
  if (int64_t chosen = rowsChosen.load(std::memory_order_relaxed); chosen >= 0)
    return chosen;
#if LOOM_HAVE_AVX2_PATH
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512 ? 1 : kSmallGemmRows;
#else
  return kSmallGemmRows;
#endif
}

void loom::cpu::setSmallGemmRowsChosen(int64_t rows) {
  rowsChosen.store(std::min(rows, kSmallGemmRows), std::memory_order_relaxed);
}

bool loom::cpu::smallGemmTakes(int64_t m, int64_t n, int64_t k) {
#if LOOM_HAVE_AVX2_PATH
  return m > 0 && m <= kSmallGemmRows && n > 0 && k > 0 && avx2Enabled();
#else
  (void)m, (void)n, (void)k;
  return false;
#endif
}

bool loom::cpu::smallGemm(const float *x, const float *w, int64_t m, int64_t n,
                          int64_t k, float *y, ThreadPool *pool) {
#if LOOM_HAVE_AVX2_PATH
  if (!smallGemmTakes(m, n, k))
    return false;
  overRowChunks(pool, n, rowGrain(k), [&](int64_t begin, int64_t end) {
    rowsOfY(x, w, m, n, k, y, begin, end);
  });
  return true;
#else
  (void)x, (void)w, (void)m, (void)n, (void)k, (void)y, (void)pool;
  return false;
#endif
}
