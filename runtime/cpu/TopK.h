//===- TopK.h - The best few scores of a row --------------------*- C++ -*-===//
//
// Decoding ranks every row of log-probabilities at every step (the 2k best
// tokens of each hypothesis for a beam of k, 2 for greedy search through
// the beam): 8000 to 37000 scores for a handful of winners. One pass keeps
// the best k seen so far in order, and a score that does not beat the k-th
// is dismissed eight at a time by one comparison of AVX2 lanes; only the few
// that do are inserted. A sort of the whole row's indices cost more than the
// decoder's own arithmetic on small models.
//
// The order is the devices' one: a higher score first, equal scores by
// lower index, and NaN (a model that diverged) below every number, -inf
// included.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_TOPK_H
#define LOOM_RUNTIME_CPU_TOPK_H

#include <cmath>
#include <cstdint>

namespace loom::cpu {

/// Whether score `a` ranks above `b` (NaN below every number), so that the
/// order stays a strict weak order and a NaN is never chosen over a number.
inline bool ranksAbove(float a, float b) {
  if (std::isnan(a))
    return false;
  return std::isnan(b) || a > b;
}

/// The k (1 <= k <= n) best of row[0, n), best first, into values and
/// indices.
void topKOfRow(const float *row, int64_t n, int64_t k, float *values,
               int32_t *indices);

/// The index of the best of row[0, n), n >= 1, in the same order: the
/// first of the largest numbers, or 0 where every score is NaN. Greedy
/// search takes one per row of 8000 or more scores at every step, so the
/// AVX2 path finds the maximum eight lanes at a time (a NaN lane keeps
/// the number it had) and then its first position, rather than compare
/// score by score.
int64_t argmaxOfRow(const float *row, int64_t n);

/// log(sum exp(row[i])) over row[0, n), given the row's largest number
/// `max` (its best by the order above). Not a number where `max` is not
/// (no log-softmax of such a row is) or where the row holds a NaN.
float logSumExpOfRow(const float *row, int64_t n, float max);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_TOPK_H
