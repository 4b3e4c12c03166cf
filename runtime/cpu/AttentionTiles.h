//===- AttentionTiles.h - What the attention kernels share ------*- C++ -*-===//
//
// What the forward (AttentionKernels.cpp) and the backward
// (AttentionBackward.cpp) share: the checked problem, the additive bias of a
// tile of scores, dropout factors, and the small dense loops they are built
// from.
//
// The loops work on 8-lane vectors (the compiler's vector extensions) in
// panels of up to 6 rows by 16 columns, so the accumulators stay in registers
// and float sums are split into lanes explicitly (the build has no fast-math to
// let the compiler reassociate them). They are always inlined, so each kernel
// entry compiled for AVX2 + FMA (LOOM_ATTENTION_CLONES) gets them compiled for
// AVX2 + FMA too, while the library still runs on any x86-64.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_ATTENTIONTILES_H
#define LOOM_RUNTIME_CPU_ATTENTIONTILES_H

#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/Kernels.h"

#include "abi/CounterRng.h"
#include "abi/Error.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#ifndef LOOM_ATTENTION_CLONES
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__)
#define LOOM_ATTENTION_CLONES                                                  \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LOOM_ATTENTION_CLONES
#endif
#endif
#define LOOM_ATTENTION_INLINE inline __attribute__((always_inline))

// Vec8 only passes between always-inlined helpers, so GCC's note that AVX
// vectors are passed differently with and without AVX does not apply (it is
// reported where they are used, in the two files that include this one).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace loom::cpu::attention {

/// loom.causal_mask's value (ir/LoomDialect.h's kMaskedScore, which the
/// runtime cannot include).
constexpr double kMaskedScore = -1e9;
/// Scores at least this far below their row's largest bias are exactly zero
/// after the softmax (in float and in the interpreter's double; in the
/// backward, given the forward's lse), so a tile of nothing else is skipped:
/// causal blocks above the diagonal, padding.
constexpr double kDeadBias = kMaskedScore / 2;
/// An lse this large in magnitude is too coarse in float to recover P from
/// (its spacing is 1/8 or more): loom.attention_grad recomputes such a row's
/// lse from its scores (ir/LoomDialect.h's kCoarseLse).
constexpr double kCoarseLse = double(1 << 20);
/// Keys per block: one block of scores per query row stays in L1.
constexpr int64_t kKeyBlock = 64;
/// Panel width of the dense loops; key blocks are padded to it.
constexpr int64_t kLanes = 16;

inline int64_t roundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/// An attention call after its shapes and attributes were checked. q is
/// [lead..., Sq, D], k [lead..., Sk, D], v [lead..., Sk, Dv]; `batch` is the
/// product of the lead dims.
struct Problem {
  const float *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  /// Keys and values held in bf16 (the forward's only; k and v are null
  /// then): a decoder's caches at --precision bf16, widened to f32 as they
  /// are read.
  const uint16_t *k16 = nullptr, *v16 = nullptr;
  std::vector<int64_t> lead;
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
  /// Elements from one key (value) of a batch entry to its next, and from
  /// batch entry b's first key to b + 1's: [lead..., Sk, D] keys by default,
  /// [Sk, lead..., D] with keys held position first.
  int64_t keyStride = 0, keyBatchStride = 0;
  int64_t valueStride = 0, valueBatchStride = 0;
  /// The mask's strides over the scores [lead..., Sq, Sk], 0 on broadcast
  /// dims.
  std::vector<int64_t> maskStrides;
  float scale = 1;
  bool causal = false;
  double rate = 0;
  uint64_t key = 0;
  float keepScale = 1; // 1 / (1 - rate)
  /// dropoutKeep(key, index, rate) is keepBits(key, index) >= keepThreshold.
  uint64_t keepThreshold = 0;

  bool hasBias() const { return mask || causal; }
  bool bf16Keys() const { return k16 != nullptr; }
  /// The keys and values as elements of type T (float or bf16's uint16_t).
  template <typename T> const T *keys() const;
  template <typename T> const T *values() const;
  bool dropout() const { return rate > 0; }
  /// The mask's offset of scores [b..., 0, 0] (b the flattened lead index).
  int64_t maskBase(int64_t b) const {
    int64_t offset = 0, rank = static_cast<int64_t>(lead.size());
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      offset += (b % lead[dim]) * maskStrides[dim];
      b /= lead[dim];
    }
    return offset;
  }
  int64_t maskRowStride() const { return maskStrides[lead.size()]; }
  int64_t maskColStride() const { return maskStrides[lead.size() + 1]; }
};

template <> inline const float *Problem::keys<float>() const { return k; }
template <> inline const float *Problem::values<float>() const { return v; }
template <> inline const uint16_t *Problem::keys<uint16_t>() const {
  return k16;
}
template <> inline const uint16_t *Problem::values<uint16_t>() const {
  return v16;
}

/// Checks `call` as "attention" (`backward` false) or "attention_grad",
/// attributes included, and fills `p`; or says why it was refused. `rest`
/// receives the remaining tensor arguments in order: out, lse (forward) or
/// out, lse, dout, dq, dk, dv (backward).
Status prepareAttention(const KernelCall &call, bool backward, Problem &p,
                        std::vector<const TensorRef *> &rest);

/// Per-thread scratch, reused across calls so that tasks do not allocate.
struct Scratch {
  std::vector<float> floats;
  std::vector<double> doubles;
  float *take(size_t n) {
    if (floats.size() < n)
      floats.resize(n);
    return floats.data();
  }
  double *takeDoubles(size_t n) {
    if (doubles.size() < n)
      doubles.resize(n);
    return doubles.data();
  }
};
Scratch &threadScratch();

/// Eight floats in one AVX register (two SSE registers in the baseline
/// build). The compiler's vector extensions, rather than loops it might
/// vectorize, keep a panel's accumulators in registers.
typedef float Vec8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));

LOOM_ATTENTION_INLINE Vec8 load8(const float *p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
LOOM_ATTENTION_INLINE void store8(float *p, Vec8 v) {
  std::memcpy(p, &v, sizeof(v));
}
LOOM_ATTENTION_INLINE Vec8 splat8(float x) {
  return Vec8{x, x, x, x, x, x, x, x};
}
/// Eight bf16 values widened to f32: a bf16 is the high half of the f32 of
/// the same value, so widening is a zero-extension and a shift.
LOOM_ATTENTION_INLINE Vec8 load8(const uint16_t *p) {
  typedef uint16_t Half8 __attribute__((vector_size(16)));
  Half8 h;
  std::memcpy(&h, p, sizeof(h));
  Int8 wide = __builtin_convertvector(h, Int8) << 16;
  return reinterpret_cast<Vec8>(wide);
}
/// Sixteen bf16 values as two vectors of f32, `even` holding elements 0, 2,
/// ..., 14 and `odd` 1, 3, ..., 15: each 32-bit word holds an even element
/// in its low half and the next in its high half, so a shift and a mask
/// widen sixteen, where widening them in order takes two zero-extensions
/// and two shifts.
LOOM_ATTENTION_INLINE void load16Split(const uint16_t *p, Vec8 &even,
                                       Vec8 &odd) {
  Int8 words;
  std::memcpy(&words, p, sizeof(words));
  const int32_t high = int32_t(0xffff0000u);
  even = reinterpret_cast<Vec8>(words << 16);
  odd = reinterpret_cast<Vec8>(
      words & Int8{high, high, high, high, high, high, high, high});
}
/// dst[r][0, cols) = src[r * stride + 0, cols) widened to f32 (dst rows
/// `cols` apart), for rows of bf16 keys or values read by the f32 loops.
LOOM_ATTENTION_INLINE void widenRows(const uint16_t *src, int64_t rows,
                                     int64_t cols, int64_t stride, float *dst) {
  int64_t cols8 = cols / 8 * 8;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *in = src + r * stride;
    float *out = dst + r * cols;
    int64_t c = 0;
    for (; c < cols8; c += 8)
      store8(out + c, load8(in + c));
    for (; c < cols; ++c)
      out[c] = floatFromBf16(in[c]);
  }
}
LOOM_ATTENTION_INLINE float sum8(Vec8 v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/// exp(x) lane by lane (Cephes' expf: x = n ln2 + r, a degree-6 polynomial
/// for exp(r), 2^n through the exponent bits): within 2 ulp of std::exp, and
/// exactly 0 below -87.3, where expf leaves the normal range.
LOOM_ATTENTION_INLINE Vec8 exp8(Vec8 x) {
  const Vec8 lo = splat8(-87.3f), hi = splat8(88.3f);
  Vec8 c = x < lo ? lo : x;
  c = c > hi ? hi : c;
  Vec8 t = c * 1.44269504088896341f;
  Vec8 half = t < Vec8{} ? splat8(-0.5f) : splat8(0.5f);
  Int8 n = __builtin_convertvector(t + half, Int8);
  Vec8 fn = __builtin_convertvector(n, Vec8);
  Vec8 r = c - fn * 0.693359375f + fn * 2.12194440e-4f;
  Vec8 y = splat8(1.9875691500e-4f);
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  Vec8 pow2 = reinterpret_cast<Vec8>((n + 127) << 23);
  return x < lo ? Vec8{} : y * pow2;
}

LOOM_ATTENTION_INLINE float fastExp(float x) { return exp8(splat8(x))[0]; }

/// Row loops below run over whole 8-lane chunks: the callers pad each row
/// of scores to a multiple of 8 with -inf (probabilities with 0).
LOOM_ATTENTION_INLINE float rowMax(const float *x, int64_t n8, float init) {
  Vec8 m = splat8(init);
  for (int64_t j = 0; j < n8; j += 8) {
    Vec8 v = load8(x + j);
    m = m < v ? v : m;
  }
  float top = init;
  for (int l = 0; l < 8; ++l)
    top = top < m[l] ? m[l] : top;
  return top;
}

LOOM_ATTENTION_INLINE float rowSum(const float *x, int64_t n8) {
  Vec8 s{};
  for (int64_t j = 0; j < n8; j += 8)
    s += load8(x + j);
  return sum8(s);
}

LOOM_ATTENTION_INLINE float rowDot(const float *x, const float *y, int64_t n8) {
  Vec8 s{};
  for (int64_t j = 0; j < n8; j += 8)
    s += load8(x + j) * load8(y + j);
  return sum8(s);
}

/// C[0..R)[0..8 NV) (+)= sum_k A(r, k) * B[k][0..8 NV), A(r, k) at
/// a[r * ars + k * acs].
template <int R, int NV, bool Accumulate>
LOOM_ATTENTION_INLINE void gemmPanel(int64_t depth, const float *a, int64_t ars,
                                     int64_t acs, const float *b, int64_t ldb,
                                     float *c, int64_t ldc) {
  Vec8 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = Accumulate ? load8(c + r * ldc + 8 * v) : Vec8{};
  for (int64_t k = 0; k < depth; ++k) {
    Vec8 bk[NV];
    for (int v = 0; v < NV; ++v)
      bk[v] = load8(b + k * ldb + 8 * v);
    for (int r = 0; r < R; ++r) {
      Vec8 s = splat8(a[r * ars + k * acs]);
      for (int v = 0; v < NV; ++v)
        acc[r][v] += s * bk[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v)
      store8(c + r * ldc + 8 * v, acc[r][v]);
}

template <int NV, bool Accumulate>
LOOM_ATTENTION_INLINE void
gemmColumns(int64_t rows, int64_t depth, const float *a, int64_t ars,
            int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc) {
  // Six rows by two vectors take 12 of the 16 AVX registers for sums.
  int64_t r = 0;
  for (; r + 6 <= rows; r += 6)
    gemmPanel<6, NV, Accumulate>(depth, a + r * ars, ars, acs, b, ldb,
                                 c + r * ldc, ldc);
  for (; r + 3 <= rows; r += 3)
    gemmPanel<3, NV, Accumulate>(depth, a + r * ars, ars, acs, b, ldb,
                                 c + r * ldc, ldc);
  for (; r < rows; ++r)
    gemmPanel<1, NV, Accumulate>(depth, a + r * ars, ars, acs, b, ldb,
                                 c + r * ldc, ldc);
}

/// C (rows x cols, ldc) (+)= A (rows x depth) * B (depth x cols, ldb), with
/// A(r, k) at a[r * ars + k * acs] so that A may be read transposed.
template <bool Accumulate>
LOOM_ATTENTION_INLINE void
gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t ars,
     int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc) {
  int64_t n = 0;
  for (; n + 16 <= cols; n += 16)
    gemmColumns<2, Accumulate>(rows, depth, a, ars, acs, b + n, ldb, c + n,
                               ldc);
  if (n + 8 <= cols) {
    gemmColumns<1, Accumulate>(rows, depth, a, ars, acs, b + n, ldb, c + n,
                               ldc);
    n += 8;
  }
  // Head dims that are not a multiple of 8.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t l = n; l < cols; ++l) {
      float s = Accumulate ? c[r * ldc + l] : 0.0f;
      for (int64_t k = 0; k < depth; ++k)
        s += a[r * ars + k * acs] * b[k * ldb + l];
      c[r * ldc + l] = s;
    }
}

/// C[r][j] = dot(A row r, B row j) over `depth`, for the few query rows of a
/// decode step, where transposing a key block would cost as much as using
/// it: four keys at a time.
LOOM_ATTENTION_INLINE void dotRows(int64_t rows, int64_t cols, int64_t depth,
                                   const float *a, int64_t lda, const float *b,
                                   int64_t ldb, float *c, int64_t ldc) {
  int64_t d8 = depth / 8 * 8;
  for (int64_t r = 0; r < rows; ++r) {
    const float *ar = a + r * lda;
    for (int64_t j = 0; j < cols; j += 4) {
      int64_t g4 = std::min<int64_t>(4, cols - j);
      // Zeroed one by one: `= {}` on the array compiles to a `rep stos`,
      // whose start-up cost a decode step's 32-float dot products notice.
      Vec8 acc[4];
      for (int g = 0; g < 4; ++g)
        acc[g] = splat8(0.0f);
      for (int64_t t = 0; t < d8; t += 8) {
        Vec8 x = load8(ar + t);
        for (int g = 0; g < 4; ++g)
          if (g < g4)
            acc[g] += x * load8(b + (j + g) * ldb + t);
      }
      for (int g = 0; g < g4; ++g) {
        float s = sum8(acc[g]);
        for (int64_t t = d8; t < depth; ++t)
          s += ar[t] * b[(j + g) * ldb + t];
        c[r * ldc + j + g] = s;
      }
    }
  }
}

#if defined(__clang__)
#define LOOM_SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define LOOM_SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, Int8{__VA_ARGS__})
#endif

/// Transposes the 8 x 8 block of `src` (rows lds apart) into `dst` (rows
/// ldd apart) in registers: 24 shuffles instead of 64 scalar moves.
LOOM_ATTENTION_INLINE void transpose8x8(const float *src, int64_t lds,
                                        float *dst, int64_t ldd) {
  Vec8 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i)
    r[i] = load8(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = LOOM_SHUFFLE8(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = LOOM_SHUFFLE8(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = LOOM_SHUFFLE8(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 1] = LOOM_SHUFFLE8(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[i + 2] = LOOM_SHUFFLE8(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[i + 3] = LOOM_SHUFFLE8(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    store8(dst + i * ldd,
           LOOM_SHUFFLE8(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11));
    store8(dst + (i + 4) * ldd,
           LOOM_SHUFFLE8(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15));
  }
}

/// dst[t][j] = src[j][t] for j < rows, t < cols; columns [rows, ldd) of dst
/// (ldd a multiple of 8) are zeroed so that whole panels can be read.
LOOM_ATTENTION_INLINE void transpose(const float *src, int64_t rows,
                                     int64_t cols, int64_t lds, float *dst,
                                     int64_t ldd) {
  int64_t cols8 = cols / 8 * 8;
  for (int64_t j0 = 0; j0 < ldd; j0 += 8) {
    int64_t n = std::clamp<int64_t>(rows - j0, 0, 8);
    int64_t t = 0;
    for (; t < cols8; t += 8) {
      if (n == 8) {
        transpose8x8(src + j0 * lds + t, lds, dst + t * ldd + j0, ldd);
        continue;
      }
      // The last rows, completed with zeros.
      float block[64] = {};
      for (int64_t j = 0; j < n; ++j)
        store8(block + 8 * j, load8(src + (j0 + j) * lds + t));
      transpose8x8(block, 8, dst + t * ldd + j0, ldd);
    }
    for (; t < cols; ++t)
      for (int64_t j = 0; j < 8; ++j)
        dst[t * ldd + j0 + j] = j < n ? src[(j0 + j) * lds + t] : 0.0f;
  }
}

/// Each row's largest bias (mask + causal) over all keys, into `shift`.
/// Scores are formed relative to it: a float cannot hold -1e9 + a score, so
/// a row whose every key is masked would otherwise turn uniform, where the
/// interpreter (in double) keeps the scores' differences.
void rowShifts(const Problem &p, int64_t maskBase, int64_t i0, int64_t rows,
               double *shift);

/// bias[r][c] = mask + causal - shift[r] for query i0 + r and key j0 + c;
/// returns whether any of them is above kDeadBias.
LOOM_ATTENTION_INLINE bool fillBias(const Problem &p, int64_t maskBase,
                                    int64_t i0, int64_t rows, int64_t j0,
                                    int64_t cols, const double *shift,
                                    float *bias, int64_t ld) {
  if (!p.mask) {
    // Causal only: the shift is 0 (key 0 is never masked).
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        bias[r * ld + c] = j0 + c > i0 + r ? float(kMaskedScore) : 0.0f;
    return j0 <= i0 + rows - 1;
  }
  bool live = false;
  int64_t cs = p.maskColStride();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t i = i0 + r;
    const float *m = p.mask + maskBase + i * p.maskRowStride() + j0 * cs;
    float *out = bias + r * ld;
    double top = kDeadBias;
    for (int64_t c = 0; c < cols; ++c) {
      double x = double(m[c * cs]) - shift[r];
      if (p.causal && j0 + c > i)
        x += kMaskedScore;
      out[c] = static_cast<float>(x);
      top = top < x ? x : top;
    }
    live |= top > kDeadBias;
  }
  return live;
}

/// The 53 bits that dropoutUniform scales by 2^-53. Since that scaling is
/// exact, u * 2^-53 >= rate exactly when u >= ceil(rate * 2^53): an integer
/// compare the compiler vectorizes, where the double conversion is not.
LOOM_ATTENTION_INLINE uint64_t keepBits(uint64_t key, uint64_t index) {
  return mix64(key + index * 0x9e3779b97f4a7c15ULL) >> 11;
}

/// z[c] = the dropout factor (0 or 1 / (1 - rate)) of probability
/// [b, i, j0 + c]: element (b * Sq + i) * Sk + j0 + c of the [..., Sq, Sk]
/// tensor, as loom.dropout numbers it; 0 up to the next multiple of 8.
LOOM_ATTENTION_INLINE void keepFactors(const Problem &p, int64_t b, int64_t i,
                                       int64_t j0, int64_t cols, float *z) {
  uint64_t base = static_cast<uint64_t>((b * p.sq + i) * p.sk + j0);
  for (int64_t c = 0; c < cols; ++c)
    z[c] = keepBits(p.key, base + c) >= p.keepThreshold ? p.keepScale : 0.0f;
  for (int64_t c = cols; c < roundUp(cols, 8); ++c)
    z[c] = 0.0f;
}

} // namespace loom::cpu::attention

#endif // LOOM_RUNTIME_CPU_ATTENTIONTILES_H
