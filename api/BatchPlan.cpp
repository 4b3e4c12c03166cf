//===- BatchPlan.cpp - Sentences sorted by length into batches ------------===//

#include "api/BatchPlan.h"

#include <algorithm>

namespace loom {

std::vector<size_t> planBatches(const std::vector<int64_t> &lengths,
                                int64_t maxSentences, int64_t maxTokens) {
  std::vector<size_t> starts;
  size_t n = lengths.size();
  maxSentences = std::max<int64_t>(1, maxSentences);
  for (size_t start = 0; start < n;) {
    starts.push_back(start);
    size_t end = start + 1;
    // Ascending lengths: the sentence added is the batch's longest.
    while (end < n && int64_t(end - start) < maxSentences &&
           (maxTokens <= 0 ||
            int64_t(end - start + 1) * lengths[end] <= maxTokens))
      ++end;
    start = end;
  }
  return starts;
}

} // namespace loom
