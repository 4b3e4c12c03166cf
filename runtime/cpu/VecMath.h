//===- VecMath.h - Vectorized exp, erf and row loops ------------*- C++ -*-===//
//
// Private to runtime/cpu. The runtime is built for the baseline x86-64
// target, where the compiler neither vectorizes calls of expf/erff nor a
// float max or sum (that would reorder the additions), and the loss over a
// 37000-word vocabulary is one exp per logit. So the row loops here are
// written on the compiler's generic vectors, for any width V: polynomial exp
// and erf (Cephes' expf polynomial, within 1 ulp over the range the kernels
// use; the rational erf approximation Eigen and XLA use, within 7 ulp) and
// reductions with lanes of partial results. Sums add blocks of 256 elements
// in float and the blocks in double, so a long row loses no more than a
// short one.
//
// A kernel instantiates its row function twice: with Vec4 (one SSE
// register) for the baseline, and with Vec8 inside a function compiled for
// AVX2 and FMA (LOOM_TARGET_AVX2), which it calls when avx2Enabled() says
// the CPU has them. Everything here is always inlined, so the Vec8 code only
// ever exists inside such a function. (Vec8 on the baseline target would be
// correct but slow: the compiler splits its comparisons into scalar code.)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_VECMATH_H
#define LOOM_RUNTIME_CPU_VECMATH_H

#include <cstdint>

// GCC notes that passing a Vec8 by value changes the ABI without AVX; no
// Vec8 crosses a call (everything is inlined into AVX2 functions), and GCC
// reports it where the including file ends, so it is silenced for the rest
// of that file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#if defined(__x86_64__) || defined(__i386__)
#define LOOM_HAVE_AVX2_PATH 1
#define LOOM_TARGET_AVX2 __attribute__((target("avx2,fma")))
// AVX2 with AVX512-VNNI's 256-bit forms (vpdpbusd on ymm registers).
#define LOOM_TARGET_AVX2_VNNI                                                  \
  __attribute__((target("avx2,fma,avx512f,avx512vl,avx512vnni")))
#else
#define LOOM_HAVE_AVX2_PATH 0
#define LOOM_TARGET_AVX2
#define LOOM_TARGET_AVX2_VNNI
#endif

#define LOOM_VEC_INLINE inline __attribute__((always_inline))

namespace loom::cpu {

/// Whether kernels take their AVX2 paths: the CPU has AVX2 and FMA, and
/// setAvx2Enabled(false) was not called (tests cover both paths with it).
bool avx2Enabled();
void setAvx2Enabled(bool enabled);
/// Whether kernels may take AVX512-VNNI paths (LOOM_TARGET_AVX2_VNNI): the
/// CPU has AVX512-VNNI and AVX512-VL, avx2Enabled(), and setVnniEnabled(false)
/// was not called.
bool vnniEnabled();
void setVnniEnabled(bool enabled);

namespace vec {

typedef float Vec4 __attribute__((vector_size(16)));
typedef float Vec8 __attribute__((vector_size(32)));

/// Lanes of V, and the integer vector its comparisons give.
template <typename V> constexpr int64_t kLanes = sizeof(V) / sizeof(float);
template <typename V> using IntOf = decltype(V{} < V{});

template <typename V> LOOM_VEC_INLINE V load(const float *p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <typename V> LOOM_VEC_INLINE void store(float *p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}
template <typename V> LOOM_VEC_INLINE V splat(float x) { return V{} + x; }

/// Lanes where `c` holds (all bits set) take `a`, others `b`.
template <typename V> LOOM_VEC_INLINE V blend(IntOf<V> c, V a, V b) {
  using I = IntOf<V>;
  return (V)((c & (I)a) | (~c & (I)b));
}

template <typename V> LOOM_VEC_INLINE V clamp(V x, float lo, float hi) {
  // Written so that a NaN lane compares false both times and stays NaN.
  V l = splat<V>(lo), h = splat<V>(hi);
  x = blend<V>(x < l, l, x);
  return blend<V>(x > h, h, x);
}

/// e^x. Inputs below -87.3 give the smallest normal float rather than 0 and
/// above 88.3 give about 2e38: the kernels only exponentiate x - max <= 0,
/// where the difference is far below float precision of the sums.
template <typename V> LOOM_VEC_INLINE V exp(V x) {
  x = clamp(x, -87.3f, 88.3f);
  // x = n ln2 + r with n an integer and |r| <= ln2/2; adding 1.5 * 2^23
  // rounds to an integer in the float unit itself.
  V t = x * 1.44269504088896341f;
  V n = (t + 12582912.0f) - 12582912.0f;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = splat<V>(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  V y = p * (r * r) + r + 1.0f;
  IntOf<V> bits = (__builtin_convertvector(n, IntOf<V>) + 127) << 23;
  return y * (V)bits;
}

/// erf(x), odd rational approximation on [-4, 4] (beyond, +-1 in float).
template <typename V> LOOM_VEC_INLINE V erf(V x) {
  x = clamp(x, -4.0f, 4.0f);
  V x2 = x * x;
  V p = splat<V>(-2.72614225801306e-10f);
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * x;
  V q = splat<V>(-1.45660718464996e-05f);
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

/// x Phi(x) with the exact erf, as loom.gelu defines it.
template <typename V> LOOM_VEC_INLINE V gelu(V x) {
  return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
}

/// Sum of the lanes, in double.
template <typename V> LOOM_VEC_INLINE double sumLanes(V v) {
  double s = 0;
  for (int64_t i = 0; i < kLanes<V>; ++i)
    s += v[i];
  return s;
}

/// The first `n` elements at `p` in a vector, the other lanes 0.
template <typename V> LOOM_VEC_INLINE V loadPartial(const float *p, int64_t n) {
  V v{};
  for (int64_t j = 0; j < n; ++j)
    v[j] = p[j];
  return v;
}
template <typename V>
LOOM_VEC_INLINE void storePartial(float *p, V v, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    p[j] = v[j];
}

/// x[i] = gelu(x[i]) over [0, n).
template <typename V> LOOM_VEC_INLINE void geluRow(float *x, int64_t n) {
  constexpr int64_t w = kLanes<V>;
  int64_t i = 0;
  for (; i + w <= n; i += w)
    store(x + i, gelu(load<V>(x + i)));
  if (i < n)
    storePartial(x + i, gelu(loadPartial<V>(x + i, n - i)), n - i);
}

/// The largest of x[0, n) (n >= 1); NaNs are skipped (they poison the sum
/// that follows anyway).
template <typename V> LOOM_VEC_INLINE float rowMax(const float *x, int64_t n) {
  constexpr int64_t w = kLanes<V>;
  float m = x[0];
  int64_t i = 0;
  if (n >= 2 * w) {
    // Two chains, so that each compare-and-select waits on half as many.
    V a = load<V>(x), b = load<V>(x + w);
    for (i = 2 * w; i + 2 * w <= n; i += 2 * w) {
      V u = load<V>(x + i), v = load<V>(x + i + w);
      a = blend<V>(u > a, u, a);
      b = blend<V>(v > b, v, b);
    }
    a = blend<V>(b > a, b, a);
    for (int64_t j = 0; j < w; ++j)
      m = a[j] > m ? a[j] : m;
  }
  for (; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

/// Elements summed in float lanes before the partial goes into a double.
constexpr int64_t kSumBlock = 256;

/// Sums exp(x[i] - shift) into `expSum` and x[i] into `plainSum`, in one
/// pass over x[0, n).
template <typename V>
LOOM_VEC_INLINE void rowExpSums(const float *x, int64_t n, float shift,
                                double &expSum, double &plainSum) {
  constexpr int64_t w = kLanes<V>;
  V s = splat<V>(shift);
  expSum = plainSum = 0;
  int64_t i = 0;
  while (i + w <= n) {
    V e{}, p{};
    int64_t blockEnd = i + kSumBlock < n ? i + kSumBlock : n;
    for (; i + w <= blockEnd; i += w) {
      V v = load<V>(x + i);
      e += exp(v - s);
      p += v;
    }
    expSum += sumLanes(e);
    plainSum += sumLanes(p);
  }
  for (; i < n; ++i) {
    V e = exp(splat<V>(x[i] - shift));
    expSum += e[0];
    plainSum += x[i];
  }
}

/// Writes y[i] = exp(x[i] - shift) over [0, n) and returns their sum; y may
/// be x (each group of lanes is read before it is written).
template <typename V>
LOOM_VEC_INLINE double rowExpStore(const float *x, float *y, int64_t n,
                                   float shift) {
  constexpr int64_t w = kLanes<V>;
  V s = splat<V>(shift);
  double total = 0;
  int64_t i = 0;
  while (i + w <= n) {
    V acc{};
    int64_t blockEnd = i + kSumBlock < n ? i + kSumBlock : n;
    for (; i + w <= blockEnd; i += w) {
      V e = exp(load<V>(x + i) - s);
      store(y + i, e);
      acc += e;
    }
    total += sumLanes(acc);
  }
  for (; i < n; ++i) {
    float e = exp(splat<V>(x[i] - shift))[0];
    y[i] = e;
    total += e;
  }
  return total;
}

/// y[i] = y[i] * scale - sub over [0, n).
template <typename V>
LOOM_VEC_INLINE void rowScaleSub(float *y, int64_t n, float scale, float sub) {
  constexpr int64_t w = kLanes<V>;
  V a = splat<V>(scale), b = splat<V>(sub);
  int64_t i = 0;
  for (; i + w <= n; i += w)
    store(y + i, load<V>(y + i) * a - b);
  for (; i < n; ++i)
    y[i] = y[i] * scale - sub;
}

} // namespace vec
} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_VECMATH_H
