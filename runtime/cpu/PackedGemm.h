//===- PackedGemm.h - Linear layers over weights packed once ----*- C++ -*-===//
//
// dnnl_sgemm packs its B operand into the layout its kernel reads on every
// call. When a few rows meet a large weight, as at every step of decoding
// (32 rows against 512 x 8000), the packing costs more than the product: on
// an AVX-512 machine dnnl_sgemm reaches 41-57 GFLOP/s at M = 32 where a
// oneDNN matmul primitive over weights reordered once into its blocked layout
// reaches 215-225 (`gemm_bench`, docs/PERFORMANCE.md).
//
// A PackedWeights cache belongs to one loaded executable. It packs a weight
// under its content version (runtime::LibraryCallArgs::versions) and reuses
// the copy until the version changes. Caches of decoders that read the same
// weights (runtime::Session::createSharing: one translator's workers) share
// the copies (shareWeightsOf), each keeping its own products and scratch, so
// that N workers hold one copy and read one, not N, through the caches.
// Contents a training step wrote (runtime::kWrittenByStep: every parameter, at
// every step) are packed the second time a call passes them, so training never
// pays for a packed copy it would use once; any other (a translator's weights,
// constants) are packed on the first call, so that the first product of a
// process is the one its later calls compute: at int8 an unpacked first call
// would multiply in f32, and a process's first translation would differ from
// its later ones.
//
// At a lower precision the packed copy is what the product reads:
//   int8  weights quantized once per output channel (symmetric, scale
//         max|w| / L) with their codes' sum per channel, each call's rows
//         per row (scale max|x| / 127) and shifted by 128 to u8, a
//         u8 x s8 -> s32 matmul, and y = (acc - 128 * channel sum) * row
//         scale * channel scale. (Given s8 rows, oneDNN shifts them itself
//         and sums the weight's columns at every call, which at one row
//         costs as much as the product.) L is 127 on a CPU with VNNI and
//         63 without: there oneDNN multiplies with vpmaddubsw, which adds
//         two u8 x s8 products into a saturating int16, so 7-bit weights
//         keep every pair sum exact (2 * 255 * 63 < 32768), where 8-bit
//         ones saturated and gave wrong results;
//   bf16  weights and rows rounded to bfloat16, accumulated in f32.
// Up to smallGemmRowsChosen() rows (one sentence; on an AVX2 CPU a beam of
// four or a small batch too) multiply a second copy instead, in panels that the
// product reads as one stream (SmallGemm.h), packed on the first such call: the
// f32 weight, or at int8 the same codes (the same integers as the packed
// product's), without oneDNN's per-call work. A weight a training step wrote is
// never put in panels: it would be multiplied row-major on first sight and from
// panels after, in two orders of summation.
// Only numbered (constant) weights are ever quantized: training, and any
// call without a number, stays in f32.
//
// Whatever oneDNN refuses (a shape or CPU without a primitive) makes
// linear() return false, and the caller runs sgemm instead: the result is
// the same either way at f32, only slower.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_PACKEDGEMM_H
#define LOOM_RUNTIME_CPU_PACKEDGEMM_H

#include "abi/Error.h"
#include "abi/LinearPrecision.h"

#include <cstdint>
#include <memory>
#include <string>

namespace loom::cpu {

class ThreadPool;
using abi::LinearPrecision;
using abi::parseLinearPrecision;

/// The largest weight code at int8 on this CPU: 127 with VNNI (AVX512-VNNI
/// or AVX-VNNI), 63 without (see above).
int int8WeightLimit();

/// The distance, in elements, to keep between the rows of a weight that a
/// oneDNN matmul reads in a plain layout, given `stride` (the rows' length)
/// and the size of an element: `stride`, or 64 bytes more where the rows
/// would sit a multiple of 2 KiB apart.
///
/// Where no blocked layout suits a matmul (f32 and int8 on AVX2 without
/// AVX-512), oneDNN picks the plain [k, n] one, and its gemm reads the
/// weight down its columns. With rows a multiple of 2 KiB long every element of
/// a column falls in the same few sets of a set-associative cache: with d_model
/// 512 or 1024, or d_ff 1536 to 4096, the product ran 1.2-1.9x as long as sgemm
/// over the unpacked weight (bench/gemm_bench at 32 and 128 rows, one
/// thread), and at d 768 or a vocabulary of 8000 as fast or faster. Rows a
/// cache line further apart fall in different sets again, and then it beats
/// sgemm at every one of those shapes (docs/PERFORMANCE.md).
int64_t spreadRowStride(int64_t stride, int64_t elementBytes);

/// What a product does to each row of y once the row holds x . w^T (the
/// linear layer's bias, residual and activation): one call per row.
struct RowEpilogue {
  void (*apply)(const void *context, int64_t row, float *y) = nullptr;
  const void *context = nullptr;

  explicit operator bool() const { return apply != nullptr; }
  void operator()(int64_t row, float *y) const { apply(context, row, y); }
};

class PackedWeights {
public:
  PackedWeights();
  ~PackedWeights();
  PackedWeights(const PackedWeights &) = delete;
  PackedWeights &operator=(const PackedWeights &) = delete;

  /// y[m, n] = x[m, k] . w[n, k]^T, all row-major, with `w` packed, when `w`
  /// (of content `version`, nonzero) has been packed or is packed now.
  /// Returns false, leaving `y` untouched, when the caller must compute it.
  /// Up to smallGemmRowsChosen() rows multiply the weight's panels
  /// (SmallGemm.h), split over `pool`. When it returns true, `after` has
  /// been applied to every row of y: at int8 to each row as soon as it is
  /// dequantized, while it is still in the first-level cache, rather than in
  /// a second pass over y (the 8000-word generator's rows are 32 KB each).
  bool linear(const float *x, const float *w, uint64_t version, int64_t m,
              int64_t n, int64_t k, float *y,
              LinearPrecision precision = LinearPrecision::F32,
              ThreadPool *pool = nullptr, const RowEpilogue &after = {});

  /// Takes `other`'s copies of weights, now and from now on, instead of
  /// its own: the two may then multiply on different threads at once.
  /// Weights are known by address and version, so the two share what their
  /// callers share.
  void shareWeightsOf(const PackedWeights &other);

  /// Bytes held in packed copies (shared ones included).
  int64_t packedBytes() const;

private:
  struct Store;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_PACKEDGEMM_H
