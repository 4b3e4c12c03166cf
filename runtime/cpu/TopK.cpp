//===- TopK.cpp - The best few scores of a row ----------------------------===//

#include "runtime/cpu/TopK.h"
#include "runtime/cpu/VecMath.h"

#include <algorithm>
#include <limits>

#if LOOM_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

using namespace loom::cpu;

namespace {

/// The best k so far, best first: `count` of them until k are seen.
struct Best {
  float *values;
  int32_t *indices;
  int64_t k, count = 0;

  /// Offers row[i]; i grows from call to call, so a score equal to one kept
  /// ranks below it.
  void offer(float v, int64_t i) {
    if (count == k && !ranksAbove(v, values[k - 1]))
      return;
    int64_t at = count < k ? count++ : k - 1;
    for (; at > 0 && ranksAbove(v, values[at - 1]); --at) {
      values[at] = values[at - 1];
      indices[at] = indices[at - 1];
    }
    values[at] = v;
    indices[at] = static_cast<int32_t>(i);
  }

  /// Whether a score that is not above `threshold()` is dismissed by the
  /// lanes' ordered comparison: k are kept and the k-th is a number (above
  /// a NaN every number ranks, which `>` does not say).
  bool full() const { return count == k && !std::isnan(values[k - 1]); }
  float threshold() const { return values[k - 1]; }
};

void scanBase(const float *row, int64_t from, int64_t n, Best &best) {
  for (int64_t i = from; i < n; ++i)
    best.offer(row[i], i);
}

#if LOOM_HAVE_AVX2_PATH
LOOM_TARGET_AVX2 void scanAvx2(const float *row, int64_t n, Best &best) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (best.full()) {
      __m256 v = _mm256_loadu_ps(row + i);
      // Ordered: a NaN score is never above, as ranksAbove says.
      __m256 above = _mm256_cmp_ps(v, _mm256_set1_ps(best.threshold()),
                                   _CMP_GT_OQ);
      int mask = _mm256_movemask_ps(above);
      if (!mask)
        continue;
    }
    for (int64_t j = i; j < i + 8; ++j)
      best.offer(row[j], j);
  }
  scanBase(row, i, n, best);
}

/// argmaxOfRow on AVX2: the maximum of the numbers in four accumulators
/// (max_ps returns its second operand where either is NaN, so a NaN score
/// never replaces a number), then the first position that holds it.
LOOM_TARGET_AVX2 int64_t argmaxAvx2(const float *row, int64_t n) {
  const float lowest = -std::numeric_limits<float>::infinity();
  __m256 m0 = _mm256_set1_ps(lowest), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(row + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(row + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(row + i + 16), m2);
    m3 = _mm256_max_ps(_mm256_loadu_ps(row + i + 24), m3);
  }
  for (; i + 8 <= n; i += 8)
    m0 = _mm256_max_ps(_mm256_loadu_ps(row + i), m0);
  __m256 m = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = lowest;
  for (float v : lanes)
    best = std::max(best, v);
  for (; i < n; ++i)
    if (row[i] > best)
      best = row[i];
  // Every score is NaN or -inf: the scalar order decides (index 0 for all
  // NaN, the first -inf otherwise).
  if (best == lowest)
    return -1;
  __m256 target = _mm256_set1_ps(best);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    int mask = _mm256_movemask_ps(
        _mm256_cmp_ps(_mm256_loadu_ps(row + j), target, _CMP_EQ_OQ));
    if (mask)
      return j + __builtin_ctz(unsigned(mask));
  }
  for (; j < n; ++j)
    if (row[j] == best)
      return j;
  return -1;
}
#endif

template <typename V>
LOOM_VEC_INLINE double expSumOfRow(const float *row, int64_t n, float max) {
  double expSum, plainSum;
  vec::rowExpSums<V>(row, n, max, expSum, plainSum);
  return expSum;
}
double expSumBase(const float *row, int64_t n, float max) {
  return expSumOfRow<vec::Vec4>(row, n, max);
}
#if LOOM_HAVE_AVX2_PATH
LOOM_TARGET_AVX2 double expSumAvx2(const float *row, int64_t n, float max) {
  return expSumOfRow<vec::Vec8>(row, n, max);
}
#endif

int64_t argmaxBase(const float *row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (ranksAbove(row[i], row[best]))
      best = i;
  return best;
}

} // namespace

int64_t loom::cpu::argmaxOfRow(const float *row, int64_t n) {
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    if (int64_t best = argmaxAvx2(row, n); best >= 0)
      return best;
#endif
  return argmaxBase(row, n);
}

float loom::cpu::logSumExpOfRow(const float *row, int64_t n, float max) {
  // +inf less +inf, and -inf less -inf, are NaN in a log-softmax too.
  if (!std::isfinite(max))
    return std::numeric_limits<float>::quiet_NaN();
  double sum;
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    sum = expSumAvx2(row, n, max);
  else
#endif
    sum = expSumBase(row, n, max);
  // A NaN anywhere makes the sum NaN.
  return static_cast<float>(double(max) + std::log(sum));
}

void loom::cpu::topKOfRow(const float *row, int64_t n, int64_t k,
                          float *values, int32_t *indices) {
  Best best{values, indices, k};
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    return scanAvx2(row, n, best);
#endif
  scanBase(row, 0, n, best);
}
