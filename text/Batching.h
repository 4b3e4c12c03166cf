//===- Batching.h - Token-budget batching -----------------------*- C++ -*-===//
//
// Training batches hold a budget of tokens rather than a number of sentences,
// so that a batch of short sentences is as much work as a batch of long ones
// and the compiled model's arena (planned for --max-tokens) always fits.
// Pairs of similar length go together so that little of a batch is padding:
// pairs are sorted by (target length, source length), ties in a random order,
// and cut greedily into batches whose padded size
//
//   pairs in the batch * max(longest source, longest target) <= maxTokens
//
// (and, when given, pairs in the batch <= maxBatch). A single pair longer
// than the budget cannot share it and becomes a batch of its own; callers
// that compile for --max-tokens drop such pairs beforehand (a --max-len of at
// most --max-tokens does it). The order of the batches is then shuffled, so
// an epoch does not run from short to long sentences.
//
// Both random choices come from a generator seeded by (seed, epoch) alone,
// so an epoch's batches, and their order, are the same on every run: a
// resumed run continues exactly where it stopped. The generator and the
// shuffle are written out here rather than taken from <random>'s
// distributions, whose results differ between standard libraries.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_BATCHING_H
#define LOOM_TEXT_BATCHING_H

#include <cstdint>
#include <vector>

namespace loom::text {

/// The lengths of one pair as the model sees them (bos/eos included when
/// the model adds them).
struct PairLengths {
  int64_t src = 0;
  int64_t tgt = 0;
};

/// Indices into the pairs given to the batching functions.
using Batch = std::vector<int64_t>;

/// The batches of one training epoch; every pair is in exactly one of them.
/// `maxBatch` <= 0 leaves the number of pairs per batch unbounded.
std::vector<Batch> makeEpoch(const std::vector<PairLengths> &pairs,
                             int64_t maxTokens, uint64_t seed, int64_t epoch,
                             int64_t maxBatch = 0);

/// Batches for evaluation and translation: the same grouping, without any
/// randomness (ties keep corpus order), in order of increasing length.
std::vector<Batch> makeSortedBatches(const std::vector<PairLengths> &pairs,
                                     int64_t maxTokens, int64_t maxBatch = 0);

/// The padded size of `batch`: pairs * max(longest source, longest target).
int64_t paddedTokens(const Batch &batch, const std::vector<PairLengths> &pairs);

} // namespace loom::text

#endif // LOOM_TEXT_BATCHING_H
