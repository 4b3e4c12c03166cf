//===- SmallGemm.h - A linear layer's product for a few rows ----*- C++ -*-===//
//
// y[m, n] = x[m, k] . w[n, k]^T for m of at most kSmallGemmRows, in f32 or
// int8. Decoding one sentence greedily, a beam of four, or a batch of up to
// eight sentences greedily multiplies one to eight rows by every weight of
// the decoder at every step; that product is bound by reading the weight
// (7.8 MB per step for the multi30k model in f32, at what the caches
// deliver), and a oneDNN matmul adds its per-call work on top (an argument
// map and an execution context built per call, scratchpad, tracing) that at
// one row costs as much as a 128 x 128 product itself. Here the weight is
// read once per call against every row of x, and the pool splits large
// weights by output rows. Two layouts of the weight:
//   - as it lies, row-major: each output one dot product of a row of x with
//     a row of w, four rows of w side by side. For weights nothing keeps a
//     copy of (a training step's);
//   - in panels, copied once (SmallGemmPanels.cpp), read as one stream:
//     decoding multi30k on one core, 1.45x faster one sentence at a time
//     greedily and 1.6x with a beam of four in f32, 1.48x at int8 by eight
//     sentences greedily (interleaved A/B, same translations). For constant
//     weights (PackedGemm.h keeps the copy), and at int8.
//
// Every output is summed in one order (per layout) whatever m (up to
// kSmallGemmRows) is and wherever its row falls, so while a batch has at most
// that many rows a sentence's scores do not depend on the sentences decoded
// beside it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_SMALLGEMM_H
#define LOOM_RUNTIME_CPU_SMALLGEMM_H

#include <cstdint>

namespace loom::cpu {

class ThreadPool;

/// The most rows of x smallGemm takes. Eight made greedy decoding of batches
/// of eight sentences (the multi30k model, 1 and 2 threads, fp32 and int8)
/// 10-16% faster than four, which sent five to eight rows to oneDNN; at 32 the
/// products of 9 to 32 rows were slower than oneDNN's, which reuses each
/// loaded row of x across more outputs. (On an AVX2 CPU; see
/// smallGemmRowsChosen.)
constexpr int64_t kSmallGemmRows = 8;

/// Whether the few-row products below take m rows against w [n, k]: m in
/// (0, kSmallGemmRows], n and k positive, and a CPU with AVX2.
bool smallGemmTakes(int64_t m, int64_t n, int64_t k);

/// The most rows linear layers give these products rather than oneDNN's:
/// kSmallGemmRows on an AVX2 CPU, one where the CPU has AVX-512. There
/// oneDNN's matmul over a packed weight runs 512-bit kernels (with VNNI at
/// int8), and from two rows on it was 1.5-2.5x faster than these 256-bit
/// products (the multi30k and small models' shapes, one core, an AVX-512
/// EPYC); at one row they were as fast or faster, without its per-call
/// work (`gemm_bench`'s panels/ and packed/ variants time both).
/// setSmallGemmRowsChosen(n) makes it n in [0, kSmallGemmRows] (tests cover
/// both choices on one CPU), a negative n the CPU's choice again.
int64_t smallGemmRowsChosen();
void setSmallGemmRowsChosen(int64_t rows);

/// y = x . w^T as above; false (y untouched) where this CPU has no AVX2, or m
/// is out of (0, kSmallGemmRows]: the caller multiplies another way.
bool smallGemm(const float *x, const float *w, int64_t m, int64_t n, int64_t k,
               float *y, ThreadPool *pool);

/// The same products over a weight copied once into panels
/// (SmallGemmPanels.cpp), which they read as one stream: what decoding reads
/// at every step, where the weights are constant. An f32 panel holds
/// kPanelRows output rows of w.
constexpr int64_t kPanelRows = 16;

/// The floats, and int8 bytes, of w [n, k] in panels.
int64_t panelFloats(int64_t n, int64_t k);
int64_t codePanelBytes(int64_t n, int64_t k);

/// Copies row-major w [n, k] into `panels` (panelFloats(n, k) floats).
void packPanels(const float *w, int64_t n, int64_t k, float *panels);
/// Copies row-major int8 codes [n, k] into `panels` (codePanelBytes(n, k)).
void packCodePanels(const int8_t *codes, int64_t n, int64_t k, int8_t *panels);

/// smallGemm over `panels` (packPanels of w). Each output is summed in one
/// order whatever m is and wherever its row falls (not smallGemm's order).
bool smallGemmPanels(const float *x, const float *panels, int64_t m, int64_t n,
                     int64_t k, float *y, ThreadPool *pool);
/// The same product of int8 codes over `panels` (packCodePanels of w),
/// exact in int32: dot[m, n] = x[m, k] . w[n, k]^T, for codes of x in
/// [-127, 127] and of w in [-127, 127] (two products of |x| and w carrying
/// x's sign add up within int16 before they widen, so no sum saturates).
/// What the packed int8 product computes (its u8 rows less 128 times each
/// channel's sum), and so the same value. With `unsignedRows`, x holds the
/// codes plus 128 as u8 and dot gets x . w^T of those, which is the codes'
/// product plus 128 times each channel's sum: for weights within [-63, 63]
/// (two products of u8 and s8 then add up within int16), and two
/// instructions fewer per four codes; for any weights where vnniEnabled()
/// (VecMath.h), whose vpdpbusd sums the four products in int32 in one.
bool smallGemmInt8Panels(const int8_t *x, const int8_t *panels, int64_t m,
                         int64_t n, int64_t k, int32_t *dot, ThreadPool *pool,
                         bool unsignedRows = false);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_SMALLGEMM_H
