//===- BatchPlan.h - Sentences sorted by length into batches ----*- C++ -*-===//
//
// Translating a file, sentences of similar lengths decode together: sorted
// by length, they are cut into batches of at most a number of sentences
// (--batch) or, with a token budget (--batch-tokens), of at most that many
// source tokens counting padding (the sentences times the longest), which
// keeps the work of a batch about even whatever its sentences' lengths:
// many short ones or a few long ones. A sentence longer than the budget
// is a batch by itself.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_BATCHPLAN_H
#define LOOM_API_BATCHPLAN_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom {

/// The batches of sentences of `lengths` (ascending): the index each batch
/// starts at, ascending, from 0. A batch holds at most `maxSentences`
/// (>= 1) and, where `maxTokens` > 0, at most `maxTokens` padded tokens
/// unless it is one sentence.
std::vector<size_t> planBatches(const std::vector<int64_t> &lengths,
                                int64_t maxSentences, int64_t maxTokens);

} // namespace loom

#endif // LOOM_API_BATCHPLAN_H
