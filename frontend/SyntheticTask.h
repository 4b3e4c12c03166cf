//===- SyntheticTask.h - Toy tasks for demos and tests ----------*- C++ -*-===//
//
// Small sequence-to-sequence tasks whose answer is known exactly, so a model
// that learns them can be checked token for token: copy the source, or
// reverse it. Token ids follow Loom's convention: 0 pad, 1 unk, 2 bos, 3 eos,
// and the task's symbols from 4 up.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_SYNTHETICTASK_H
#define LOOM_FRONTEND_SYNTHETICTASK_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom {

constexpr int64_t kPadId = 0, kUnkId = 1, kBosId = 2, kEosId = 3;
constexpr int64_t kFirstSymbolId = 4;

enum class SyntheticTaskKind { Copy, Reverse };

struct SyntheticTask {
  SyntheticTaskKind kind = SyntheticTaskKind::Reverse;
  /// Ids in [4, vocab) are symbols.
  int64_t vocab = 32;
  int64_t minLength = 3;
  int64_t maxLength = 8;
};

struct SentencePair {
  std::vector<int64_t> src; // Symbols then EOS.
  std::vector<int64_t> tgt; // BOS, the answer, EOS.
};

/// `count` random pairs of `task`, deterministic in `seed`.
std::vector<SentencePair> makeSyntheticPairs(const SyntheticTask &task,
                                             int64_t count, uint64_t seed);

/// The source (or target) side of each pair.
std::vector<std::vector<int64_t>>
sourcesOf(const std::vector<SentencePair> &pairs);
std::vector<std::vector<int64_t>>
targetsOf(const std::vector<SentencePair> &pairs);

/// The answer of `task` for `src` (without BOS/EOS).
std::vector<int64_t> syntheticAnswer(const SyntheticTask &task,
                                     const std::vector<int64_t> &src);

/// Symbols as letters (id 4 is 'a', id 30 is 'A'), for printing; special
/// tokens are left out.
std::string symbolsToString(const std::vector<int64_t> &ids);

} // namespace loom

#endif // LOOM_FRONTEND_SYNTHETICTASK_H
