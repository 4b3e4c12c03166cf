//===- Batching.cpp - Token-budget batching -------------------------------===//

#include "text/Batching.h"

#include <algorithm>
#include <random>
#include <tuple>

namespace loom::text {
namespace {

/// std::mt19937_64's output is fixed by the standard, and so is seed_seq's
/// mixing; both words of seed and epoch go in.
std::mt19937_64 epochGenerator(uint64_t seed, int64_t epoch) {
  auto e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(seed),
                    static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(e),
                    static_cast<uint32_t>(e >> 32)};
  return std::mt19937_64(seq);
}

/// A uniform draw from [0, n) without modulo bias.
uint64_t uniformBelow(std::mt19937_64 &rng, uint64_t n) {
  // Reject the top partial copy of [0, n) in the generator's range.
  uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n);
  uint64_t x;
  do
    x = rng();
  while (x >= limit);
  return x % n;
}

template <typename T> void shuffle(std::vector<T> &v, std::mt19937_64 &rng) {
  for (size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[uniformBelow(rng, i)]);
}

/// Sorts `order` (indices into `pairs`) by (target, source) length, with
/// ties in the order of `tieBreak` (one key per pair).
void sortByLength(std::vector<int64_t> &order,
                  const std::vector<PairLengths> &pairs,
                  const std::vector<uint64_t> &tieBreak) {
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::tie(pairs[a].tgt, pairs[a].src, tieBreak[a], a) <
           std::tie(pairs[b].tgt, pairs[b].src, tieBreak[b], b);
  });
}

/// Cuts `order` greedily into batches within the budget.
std::vector<Batch> cut(const std::vector<int64_t> &order,
                       const std::vector<PairLengths> &pairs, int64_t maxTokens,
                       int64_t maxBatch) {
  std::vector<Batch> batches;
  Batch current;
  int64_t longest = 0;
  for (int64_t index : order) {
    int64_t length = std::max(pairs[index].src, pairs[index].tgt);
    int64_t grown = std::max(longest, length);
    auto count = static_cast<int64_t>(current.size()) + 1;
    bool overBudget = count * grown > maxTokens;
    bool overCount = maxBatch > 0 && count > maxBatch;
    if (!current.empty() && (overBudget || overCount)) {
      batches.push_back(std::move(current));
      current.clear();
      grown = length;
    }
    current.push_back(index);
    longest = grown;
  }
  if (!current.empty())
    batches.push_back(std::move(current));
  return batches;
}

} // namespace

std::vector<Batch> makeEpoch(const std::vector<PairLengths> &pairs,
                             int64_t maxTokens, uint64_t seed, int64_t epoch,
                             int64_t maxBatch) {
  std::mt19937_64 rng = epochGenerator(seed, epoch);
  // Random keys for ties: equal-length pairs meet different partners each
  // epoch instead of always sharing a batch with the same neighbours.
  std::vector<uint64_t> tieBreak(pairs.size());
  for (uint64_t &key : tieBreak)
    key = rng();
  std::vector<int64_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  sortByLength(order, pairs, tieBreak);
  std::vector<Batch> batches = cut(order, pairs, maxTokens, maxBatch);
  shuffle(batches, rng);
  return batches;
}

std::vector<Batch> makeSortedBatches(const std::vector<PairLengths> &pairs,
                                     int64_t maxTokens, int64_t maxBatch) {
  std::vector<uint64_t> tieBreak(pairs.size(), 0);
  std::vector<int64_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int64_t>(i);
  sortByLength(order, pairs, tieBreak);
  return cut(order, pairs, maxTokens, maxBatch);
}

int64_t paddedTokens(const Batch &batch,
                     const std::vector<PairLengths> &pairs) {
  int64_t longest = 0;
  for (int64_t index : batch)
    longest = std::max({longest, pairs[index].src, pairs[index].tgt});
  return static_cast<int64_t>(batch.size()) * longest;
}

} // namespace loom::text
