//===- SyntheticTask.cpp - Toy translation tasks -------------------------===//

#include "frontend/SyntheticTask.h"

#include <algorithm>
#include <random>

using namespace loom;

std::vector<int64_t> loom::syntheticAnswer(const SyntheticTask &task,
                                           const std::vector<int64_t> &src) {
  std::vector<int64_t> symbols;
  for (int64_t id : src)
    if (id >= kFirstSymbolId)
      symbols.push_back(id);
  if (task.kind == SyntheticTaskKind::Reverse)
    std::reverse(symbols.begin(), symbols.end());
  return symbols;
}

std::vector<SentencePair> loom::makeSyntheticPairs(const SyntheticTask &task,
                                                   int64_t count,
                                                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> length(task.minLength, task.maxLength);
  std::uniform_int_distribution<int64_t> symbol(kFirstSymbolId, task.vocab - 1);
  std::vector<SentencePair> pairs;
  pairs.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    SentencePair p;
    int64_t n = length(rng);
    for (int64_t j = 0; j < n; ++j)
      p.src.push_back(symbol(rng));
    p.tgt.push_back(kBosId);
    for (int64_t id : syntheticAnswer(task, p.src))
      p.tgt.push_back(id);
    p.tgt.push_back(kEosId);
    p.src.push_back(kEosId);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

std::vector<std::vector<int64_t>>
loom::sourcesOf(const std::vector<SentencePair> &pairs) {
  std::vector<std::vector<int64_t>> rows;
  for (const SentencePair &p : pairs)
    rows.push_back(p.src);
  return rows;
}

std::vector<std::vector<int64_t>>
loom::targetsOf(const std::vector<SentencePair> &pairs) {
  std::vector<std::vector<int64_t>> rows;
  for (const SentencePair &p : pairs)
    rows.push_back(p.tgt);
  return rows;
}

std::string loom::symbolsToString(const std::vector<int64_t> &ids) {
  std::string s;
  for (int64_t id : ids) {
    int64_t k = id - kFirstSymbolId;
    if (k >= 0 && k < 26)
      s += char('a' + k);
    else if (k >= 26 && k < 52)
      s += char('A' + (k - 26));
    else if (k >= 52)
      s += "<" + std::to_string(id) + ">";
    // Special tokens (pad, unk, bos, eos) are not shown.
  }
  return s;
}
