//===- SmallGemmPanels.cpp - A few rows against a weight packed in panels -===//
//
// The products of SmallGemm.h over a weight copied once into panels: each
// panel holds a run of output rows of w interleaved along k, so that the
// product reads the weight as one sequential stream. Row-major, the same
// product reads four or eight rows of w side by side, and at one row of x
// (decoding one sentence) the streams outrun what the caches' prefetchers
// follow: the multi30k decoder's 7.8 MB per step came at about 30 GB/s
// there, and at about 48 GB/s from panels (an AVX2 EPYC, one core).
//
//   f32   [ceil(n / 16)][k][16]: sixteen outputs per panel, two vectors of
//         eight, each lane its own output summed along k;
//   int8  [ceil(n / 8)][ceil(k / 4)][8][4]: eight outputs per panel, four
//         consecutive codes of each in a 32-bit lane, as vpmaddubsw and
//         vpmaddwd (or, with AVX512-VNNI, vpdpbusd) multiply and sum them
//         against four codes of x broadcast.
//
// Rows of w past n, and codes past k, are zero: they add nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/SmallGemm.h"
#include "runtime/cpu/VecMath.h"

#if LOOM_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

using namespace loom::cpu;

namespace {
constexpr int64_t kCodeLanes = 8; // int8 outputs per panel

int64_t panelsOf(int64_t n, int64_t rows) { return (n + rows - 1) / rows; }

/// Quads of four codes along k, the last padded with zeros.
int64_t quadsOf(int64_t k) { return (k + 3) / 4; }

/// The bytes of one int8 panel.
int64_t codePanelStride(int64_t k) { return quadsOf(k) * 4 * kCodeLanes; }

#if LOOM_HAVE_AVX2_PATH

/// Sixteen outputs' sums for one row of x: outputs 0-7 and 8-15, each over
/// even and over odd k. Named values rather than an array, so that the
/// compiler keeps them in registers (an array indexed by row went through
/// the stack at every step).
struct PanelSums {
  __m256 lowEven, highEven, lowOdd, highOdd;
};

LOOM_TARGET_AVX2 inline PanelSums zeroSums() {
  __m256 zero = _mm256_setzero_ps();
  return {zero, zero, zero, zero};
}

/// Adds w[i] * x[i] and w[i + 1] * x[i + 1] (the panel's rows at k = i and
/// i + 1) into s.
LOOM_TARGET_AVX2 inline void addPair(PanelSums &s, const float *x,
                                     const float *p) {
  __m256 xa = _mm256_broadcast_ss(x), xb = _mm256_broadcast_ss(x + 1);
  s.lowEven = _mm256_fmadd_ps(_mm256_loadu_ps(p), xa, s.lowEven);
  s.highEven = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8), xa, s.highEven);
  s.lowOdd = _mm256_fmadd_ps(_mm256_loadu_ps(p + 16), xb, s.lowOdd);
  s.highOdd = _mm256_fmadd_ps(_mm256_loadu_ps(p + 24), xb, s.highOdd);
}

/// Adds w[i] * x[i] alone (k's last, odd-numbered term) as an even term.
LOOM_TARGET_AVX2 inline void addLast(PanelSums &s, const float *x,
                                     const float *p) {
  __m256 xa = _mm256_broadcast_ss(x);
  s.lowEven = _mm256_fmadd_ps(_mm256_loadu_ps(p), xa, s.lowEven);
  s.highEven = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8), xa, s.highEven);
}

/// Stores the first `valid` of the sixteen outputs (even plus odd) at y.
LOOM_TARGET_AVX2 inline void storeSums(const PanelSums &s, float *y,
                                       int64_t valid) {
  __m256 low = _mm256_add_ps(s.lowEven, s.lowOdd),
         high = _mm256_add_ps(s.highEven, s.highOdd);
  if (valid == kPanelRows) {
    _mm256_storeu_ps(y, low);
    _mm256_storeu_ps(y + 8, high);
    return;
  }
  alignas(32) float lanes[kPanelRows];
  _mm256_store_ps(lanes, low);
  _mm256_store_ps(lanes + 8, high);
  std::memcpy(y, lanes, size_t(valid) * sizeof(float));
}

/// Outputs of one f32 panel for R (one to three) rows of x. Even and odd k
/// go to separate sums (FMA latency: four chains at one row keep the FMA
/// units busy), added at the end: every output is summed in this order
/// whatever R is.
template <int R>
LOOM_TARGET_AVX2 inline void panelOutputs(const float *x, const float *panel,
                                          int64_t k, float *y, int64_t n,
                                          int64_t valid) {
  static_assert(R >= 1 && R <= 3, "three rows' sums fill the registers");
  PanelSums s0 = zeroSums(), s1 = zeroSums(), s2 = zeroSums();
  int64_t i = 0;
  for (; i + 2 <= k; i += 2) {
    const float *p = panel + i * kPanelRows;
    addPair(s0, x + i, p);
    if constexpr (R > 1)
      addPair(s1, x + k + i, p);
    if constexpr (R > 2)
      addPair(s2, x + 2 * k + i, p);
  }
  if (i < k) {
    const float *p = panel + i * kPanelRows;
    addLast(s0, x + i, p);
    if constexpr (R > 1)
      addLast(s1, x + k + i, p);
    if constexpr (R > 2)
      addLast(s2, x + 2 * k + i, p);
  }
  storeSums(s0, y, valid);
  if constexpr (R > 1)
    storeSums(s1, y + n, valid);
  if constexpr (R > 2)
    storeSums(s2, y + 2 * n, valid);
}

/// Panels [first, last) against every row of x: three rows at a time, the
/// panel still in the first-level cache for the next three.
LOOM_TARGET_AVX2 void panelRange(const float *x, const float *panels, int64_t m,
                                 int64_t n, int64_t k, float *y, int64_t first,
                                 int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    const float *panel = panels + p * k * kPanelRows;
    int64_t j = p * kPanelRows, valid = std::min(kPanelRows, n - j);
    int64_t r = 0;
    for (; r + 3 <= m; r += 3)
      panelOutputs<3>(x + r * k, panel, k, y + r * n + j, n, valid);
    if (m - r == 2)
      panelOutputs<2>(x + r * k, panel, k, y + r * n + j, n, valid);
    else if (m - r == 1)
      panelOutputs<1>(x + r * k, panel, k, y + r * n + j, n, valid);
  }
}

/// Four codes of a row of x at x, of which `codes` lie before k (the rest
/// zero), as one 32-bit lane.
inline int32_t quadAt(const int8_t *x, int64_t codes) {
  int32_t quad = 0;
  if (codes == 4)
    std::memcpy(&quad, x, 4);
  else
    std::memcpy(&quad, x, size_t(codes));
  return quad;
}

/// Adds the products of one quad of a row of x with the panel's eight
/// outputs' quads w into acc, pairs added in int16 and widened to int32.
/// Signed rows: |x| (u8) times w carrying x's sign (s8), each pair at most
/// 2 * 127 * 127. Unsigned rows (codes + 128): x times w as they are, at
/// most 2 * 255 * 63 for weights within +-63, and two fewer instructions.
/// Integer sums are exact.
template <bool Unsigned>
LOOM_TARGET_AVX2 inline void addQuad(__m256i &acc, int32_t quad, __m256i w) {
  __m256i xq = _mm256_set1_epi32(quad);
  __m256i pairs = Unsigned ? _mm256_maddubs_epi16(xq, w)
                           : _mm256_maddubs_epi16(_mm256_sign_epi8(xq, xq),
                                                  _mm256_sign_epi8(w, xq));
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

LOOM_TARGET_AVX2 inline void storeDots(__m256i acc, int32_t *dot,
                                       int64_t valid) {
  if (valid == kCodeLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(dot), acc);
    return;
  }
  alignas(32) int32_t lanes[kCodeLanes];
  _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), acc);
  std::memcpy(dot, lanes, size_t(valid) * sizeof(int32_t));
}

/// dot[r][0..7] for R (one to four) rows of x against one int8 panel;
/// named sums rather than an array indexed by row, which went through the
/// stack.
template <int R, bool Unsigned>
LOOM_TARGET_AVX2 inline void panelDots(const int8_t *x, const int8_t *panel,
                                       int64_t k, int32_t *dot, int64_t n,
                                       int64_t valid) {
  static_assert(R >= 1 && R <= 4, "up to four rows at a time");
  const int64_t quads = quadsOf(k);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t g = 0; g < quads; ++g) {
    __m256i w = _mm256_loadu_si256(
        reinterpret_cast<const __m256i *>(panel + g * 4 * kCodeLanes));
    // 4 but in the last quad: a load of four bytes.
    const int64_t codes = std::min<int64_t>(4, k - 4 * g), at = 4 * g;
    addQuad<Unsigned>(a0, quadAt(x + at, codes), w);
    if constexpr (R > 1)
      addQuad<Unsigned>(a1, quadAt(x + k + at, codes), w);
    if constexpr (R > 2)
      addQuad<Unsigned>(a2, quadAt(x + 2 * k + at, codes), w);
    if constexpr (R > 3)
      addQuad<Unsigned>(a3, quadAt(x + 3 * k + at, codes), w);
  }
  storeDots(a0, dot, valid);
  if constexpr (R > 1)
    storeDots(a1, dot + n, valid);
  if constexpr (R > 2)
    storeDots(a2, dot + 2 * n, valid);
  if constexpr (R > 3)
    storeDots(a3, dot + 3 * n, valid);
}

template <bool Unsigned>
LOOM_TARGET_AVX2 void
codePanelRange(const int8_t *x, const int8_t *panels, int64_t m, int64_t n,
               int64_t k, int32_t *dot, int64_t first, int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    const int8_t *panel = panels + p * codePanelStride(k);
    int64_t j = p * kCodeLanes, valid = std::min(kCodeLanes, n - j);
    int64_t r = 0;
    for (; r + 4 <= m; r += 4)
      panelDots<4, Unsigned>(x + r * k, panel, k, dot + r * n + j, n, valid);
    if (m - r == 3)
      panelDots<3, Unsigned>(x + r * k, panel, k, dot + r * n + j, n, valid);
    else if (m - r == 2)
      panelDots<2, Unsigned>(x + r * k, panel, k, dot + r * n + j, n, valid);
    else if (m - r == 1)
      panelDots<1, Unsigned>(x + r * k, panel, k, dot + r * n + j, n, valid);
  }
}

/// acc plus the products of `quad` (four codes of x) with quad g of the
/// panel (vpdpbusd: the four products of a u8 and an s8 in each lane summed
/// into its int32).
LOOM_TARGET_AVX2_VNNI inline __m256i
addQuadVnni(__m256i acc, int32_t quad, const int8_t *panel, int64_t g) {
  __m256i w = _mm256_loadu_si256(
      reinterpret_cast<const __m256i *>(panel + g * 4 * kCodeLanes));
  return _mm256_dpbusd_epi32(acc, _mm256_set1_epi32(quad), w);
}

/// Four codes of x from `x` on.
inline int32_t fullQuad(const int8_t *x) {
  int32_t quad;
  std::memcpy(&quad, x, 4);
  return quad;
}

/// dot[r][0..7] as panelDots<R, true> gives them (rows as u8: codes + 128),
/// through AVX512-VNNI: one instruction per quad and row, where vpmaddubsw,
/// vpmaddwd and vpaddd take three (five for signed rows), and exact in
/// int32 for any weights, with no int16 pair sum to saturate. Each row sums
/// even and odd quads apart, and one or two rows four chains each:
/// vpdpbusd's latency (five cycles) would bound fewer. Whole quads load four
/// codes at once; only a last, partial one is copied code by code (a copy of a
/// variable length in the loop went through the stack at every quad).
/// Integer sums: the order changes nothing.
template <int R>
LOOM_TARGET_AVX2_VNNI inline void vnniDots(const int8_t *x, const int8_t *panel,
                                           int64_t k, int32_t *dot, int64_t n,
                                           int64_t valid) {
  static_assert(R >= 1 && R <= 4, "up to four rows at a time");
  const int64_t whole = k / 4;
  const __m256i zero = _mm256_setzero_si256();
  __m256i e0 = zero, e1 = zero, e2 = zero, e3 = zero;
  __m256i o0 = zero, o1 = zero, o2 = zero, o3 = zero;
  int64_t g = 0;
  if constexpr (R == 1) {
    __m256i t0 = zero, u0 = zero;
    for (; g + 4 <= whole; g += 4) {
      e0 = addQuadVnni(e0, fullQuad(x + 4 * g), panel, g);
      o0 = addQuadVnni(o0, fullQuad(x + 4 * g + 4), panel, g + 1);
      t0 = addQuadVnni(t0, fullQuad(x + 4 * g + 8), panel, g + 2);
      u0 = addQuadVnni(u0, fullQuad(x + 4 * g + 12), panel, g + 3);
    }
    e0 = _mm256_add_epi32(e0, t0);
    o0 = _mm256_add_epi32(o0, u0);
  }
  if constexpr (R == 2) {
    __m256i t0 = zero, u0 = zero, t1 = zero, u1 = zero;
    for (; g + 4 <= whole; g += 4) {
      const int8_t *at = x + 4 * g;
      e0 = addQuadVnni(e0, fullQuad(at), panel, g);
      o0 = addQuadVnni(o0, fullQuad(at + 4), panel, g + 1);
      t0 = addQuadVnni(t0, fullQuad(at + 8), panel, g + 2);
      u0 = addQuadVnni(u0, fullQuad(at + 12), panel, g + 3);
      e1 = addQuadVnni(e1, fullQuad(at + k), panel, g);
      o1 = addQuadVnni(o1, fullQuad(at + k + 4), panel, g + 1);
      t1 = addQuadVnni(t1, fullQuad(at + k + 8), panel, g + 2);
      u1 = addQuadVnni(u1, fullQuad(at + k + 12), panel, g + 3);
    }
    e0 = _mm256_add_epi32(e0, t0);
    o0 = _mm256_add_epi32(o0, u0);
    e1 = _mm256_add_epi32(e1, t1);
    o1 = _mm256_add_epi32(o1, u1);
  }
  for (; g + 2 <= whole; g += 2) {
    const int8_t *at = x + 4 * g;
    e0 = addQuadVnni(e0, fullQuad(at), panel, g);
    o0 = addQuadVnni(o0, fullQuad(at + 4), panel, g + 1);
    if constexpr (R > 1) {
      e1 = addQuadVnni(e1, fullQuad(at + k), panel, g);
      o1 = addQuadVnni(o1, fullQuad(at + k + 4), panel, g + 1);
    }
    if constexpr (R > 2) {
      e2 = addQuadVnni(e2, fullQuad(at + 2 * k), panel, g);
      o2 = addQuadVnni(o2, fullQuad(at + 2 * k + 4), panel, g + 1);
    }
    if constexpr (R > 3) {
      e3 = addQuadVnni(e3, fullQuad(at + 3 * k), panel, g);
      o3 = addQuadVnni(o3, fullQuad(at + 3 * k + 4), panel, g + 1);
    }
  }
  for (; g < quadsOf(k); ++g) {
    // A whole quad left over, then a partial one.
    const int64_t codes = std::min<int64_t>(4, k - 4 * g);
    const int8_t *at = x + 4 * g;
    e0 = addQuadVnni(e0, quadAt(at, codes), panel, g);
    if constexpr (R > 1)
      e1 = addQuadVnni(e1, quadAt(at + k, codes), panel, g);
    if constexpr (R > 2)
      e2 = addQuadVnni(e2, quadAt(at + 2 * k, codes), panel, g);
    if constexpr (R > 3)
      e3 = addQuadVnni(e3, quadAt(at + 3 * k, codes), panel, g);
  }
  storeDots(_mm256_add_epi32(e0, o0), dot, valid);
  if constexpr (R > 1)
    storeDots(_mm256_add_epi32(e1, o1), dot + n, valid);
  if constexpr (R > 2)
    storeDots(_mm256_add_epi32(e2, o2), dot + 2 * n, valid);
  if constexpr (R > 3)
    storeDots(_mm256_add_epi32(e3, o3), dot + 3 * n, valid);
}

/// codePanelRange<true> through vnniDots.
LOOM_TARGET_AVX2_VNNI void vnniPanelRange(const int8_t *x, const int8_t *panels,
                                          int64_t m, int64_t n, int64_t k,
                                          int32_t *dot, int64_t first,
                                          int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    const int8_t *panel = panels + p * codePanelStride(k);
    int64_t j = p * kCodeLanes, valid = std::min(kCodeLanes, n - j);
    int64_t r = 0;
    for (; r + 4 <= m; r += 4)
      vnniDots<4>(x + r * k, panel, k, dot + r * n + j, n, valid);
    if (m - r == 3)
      vnniDots<3>(x + r * k, panel, k, dot + r * n + j, n, valid);
    else if (m - r == 2)
      vnniDots<2>(x + r * k, panel, k, dot + r * n + j, n, valid);
    else if (m - r == 1)
      vnniDots<1>(x + r * k, panel, k, dot + r * n + j, n, valid);
  }
}

#endif

/// Panels per parallel chunk: about 64K multiply-adds each (a quarter of
/// the bytes per multiply-add at int8: four times as many).
int64_t panelGrain(int64_t k, int64_t rowsPerPanel, int64_t scale) {
  return std::max<int64_t>(1, scale * (int64_t(1) << 16) /
                                  (std::max<int64_t>(k, 1) * rowsPerPanel));
}

} // namespace

int64_t loom::cpu::panelFloats(int64_t n, int64_t k) {
  return panelsOf(n, kPanelRows) * k * kPanelRows;
}

void loom::cpu::packPanels(const float *w, int64_t n, int64_t k,
                           float *panels) {
  for (int64_t p = 0, e = panelsOf(n, kPanelRows); p < e; ++p) {
    float *panel = panels + p * k * kPanelRows;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t c = 0; c < kPanelRows; ++c) {
        int64_t j = p * kPanelRows + c;
        panel[i * kPanelRows + c] = j < n ? w[j * k + i] : 0.0f;
      }
  }
}

bool loom::cpu::smallGemmPanels(const float *x, const float *panels, int64_t m,
                                int64_t n, int64_t k, float *y,
                                ThreadPool *pool) {
  if (!smallGemmTakes(m, n, k))
    return false;
#if LOOM_HAVE_AVX2_PATH
  parallelRange(pool, panelsOf(n, kPanelRows), panelGrain(k, kPanelRows, 1),
                [&](int64_t first, int64_t last) {
                  panelRange(x, panels, m, n, k, y, first, last);
                });
  return true;
#else
  (void)x, (void)panels, (void)y, (void)pool;
  return false;
#endif
}

int64_t loom::cpu::codePanelBytes(int64_t n, int64_t k) {
  return panelsOf(n, kCodeLanes) * codePanelStride(k);
}

void loom::cpu::packCodePanels(const int8_t *codes, int64_t n, int64_t k,
                               int8_t *panels) {
  for (int64_t p = 0, e = panelsOf(n, kCodeLanes); p < e; ++p) {
    int8_t *panel = panels + p * codePanelStride(k);
    for (int64_t g = 0; g < quadsOf(k); ++g)
      for (int64_t c = 0; c < kCodeLanes; ++c)
        for (int64_t b = 0; b < 4; ++b) {
          int64_t j = p * kCodeLanes + c, i = 4 * g + b;
          panel[(g * kCodeLanes + c) * 4 + b] =
              j < n && i < k ? codes[j * k + i] : int8_t(0);
        }
  }
}

bool loom::cpu::smallGemmInt8Panels(const int8_t *x, const int8_t *panels,
                                    int64_t m, int64_t n, int64_t k,
                                    int32_t *dot, ThreadPool *pool,
                                    bool unsignedRows) {
  if (!smallGemmTakes(m, n, k))
    return false;
#if LOOM_HAVE_AVX2_PATH
  bool vnni = unsignedRows && vnniEnabled();
  parallelRange(pool, panelsOf(n, kCodeLanes), panelGrain(k, kCodeLanes, 4),
                [&](int64_t first, int64_t last) {
                  if (vnni)
                    vnniPanelRange(x, panels, m, n, k, dot, first, last);
                  else if (unsignedRows)
                    codePanelRange<true>(x, panels, m, n, k, dot, first, last);
                  else
                    codePanelRange<false>(x, panels, m, n, k, dot, first, last);
                });
  return true;
#else
  (void)x, (void)panels, (void)dot, (void)pool, (void)unsignedRows;
  return false;
#endif
}
