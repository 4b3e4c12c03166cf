//===- ScorePairs.cpp - Translator::scorePairs ----------------------------===//
//
// Scoring given translations: each pair is tokenized as translating would
// (the source followed by eos; the target's pieces, to which the runtime
// adds eos), the pairs are sorted by length into batches, and each batch is
// scored by runtime::scoreTargets on a free decoder.
//
//===----------------------------------------------------------------------===//

#include "api/BatchPlan.h"
#include "api/Translator.h"

#include "abi/ModelAbi.h"
#include "runtime/Decoding.h"
#include "runtime/Scoring.h"
#include "runtime/TrainStep.h"
#include "text/Bleu.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace loom {

ErrorOr<std::vector<PairScore>>
Translator::scorePairs(const std::vector<std::string> &sources,
                       const std::vector<std::string> &targets,
                       const ScoreOptions &o) {
  if (sources.size() != targets.size())
    return Status::failure(std::to_string(sources.size()) + " sources and " +
                               std::to_string(targets.size()) +
                               " targets: give one target per source",
                           ErrorCode::InvalidArgument);
  if (o.batch < 1 || o.batchTokens < 0)
    return Status::failure("the batch must be positive and its tokens not "
                           "negative, got " +
                               std::to_string(o.batch) + " and " +
                               std::to_string(o.batchTokens),
                           ErrorCode::InvalidArgument);
  if (!(o.alpha >= 0) || !std::isfinite(o.alpha))
    return Status::failure("alpha must be a finite number, not negative, "
                           "got " +
                               std::to_string(o.alpha),
                           ErrorCode::InvalidArgument);
  std::lock_guard<std::mutex> lock(calls);

  // The decoder's positions bound the target as they bound a translation:
  // its tokens and eos.
  const int64_t limit = maxSourceTokens();
  std::vector<std::vector<int32_t>> srcIds(sources.size()),
      tgtIds(targets.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    int64_t number = int64_t(i) + 1;
    // Cut where too long, only to be refused below with scoring's message
    // (a translation can be split; a pair cannot).
    ErrorOr<std::vector<std::vector<int32_t>>> parts =
        encodeParts(sources[i], number, /*splitLong=*/true);
    if (!parts)
      return parts.status();
    if (parts->size() > 1) {
      size_t tokens = 1;
      for (const std::vector<int32_t> &part : *parts)
        tokens += part.size() - 1;
      return Status::failure("the source of pair " + std::to_string(number) +
                                 " has " + std::to_string(tokens) +
                                 " tokens (eos included), more than the " +
                                 std::to_string(limit) + " the model takes",
                             ErrorCode::InvalidArgument);
    }
    // A blank source is eos alone, as the model sees an empty sentence.
    srcIds[i] = parts->empty() ? std::vector<int32_t>{abi::kEosId}
                               : std::move(parts->front());
    if (!text::isValidUtf8(targets[i]))
      return Status::failure("the target of pair " + std::to_string(number) +
                                 " is not valid UTF-8",
                             ErrorCode::InvalidArgument);
    if (!text::splitWhitespace(targets[i]).empty()) {
      ErrorOr<std::vector<int32_t>> ids = tokenizer.encode(targets[i]);
      if (!ids)
        return ids.status();
      tgtIds[i] = std::move(*ids);
    }
    if (int64_t(tgtIds[i].size()) + 1 > limit)
      return Status::failure("the target of pair " + std::to_string(number) +
                                 " has " +
                                 std::to_string(tgtIds[i].size() + 1) +
                                 " tokens (eos included), more than the " +
                                 std::to_string(limit) + " the model decodes",
                             ErrorCode::InvalidArgument);
  }

  // Similar lengths together: by source, which planBatches' token budget
  // counts, then by target, which sets the steps. The scores go back to
  // input order.
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_pair(srcIds[a].size(), tgtIds[a].size()) <
           std::make_pair(srcIds[b].size(), tgtIds[b].size());
  });
  std::vector<int64_t> lengths;
  for (size_t i : order)
    lengths.push_back(int64_t(srcIds[i].size()));
  int64_t rows = sessions[0]->program().executable().max_batch();
  std::vector<size_t> starts = planBatches(
      lengths, std::max<int64_t>(1, std::min(o.batch, rows)), o.batchTokens);
  std::vector<ErrorOr<std::vector<std::vector<float>>>> found(
      starts.size(), Status::failure("not scored", ErrorCode::Internal));
  auto batchEnd = [&](size_t b) {
    return b + 1 < starts.size() ? starts[b + 1] : order.size();
  };
  forEachBatch(starts.size(), [&](int worker, size_t b) {
    std::vector<std::vector<int64_t>> src;
    std::vector<std::vector<int32_t>> tgt;
    runtime::ScoringOptions options;
    for (size_t i = starts[b]; i < batchEnd(b); ++i) {
      src.emplace_back(srcIds[order[i]].begin(), srcIds[order[i]].end());
      tgt.push_back(tgtIds[order[i]]);
      options.sentenceNumbers.push_back(int64_t(order[i]) + 1);
    }
    ErrorOr<runtime::Tensor> ids = runtime::idsTensor(src);
    if (!ids) {
      found[b] = ids.status();
      return;
    }
    std::lock_guard<std::mutex> busy(*sessionInUse[worker]);
    found[b] =
        runtime::scoreTargets(*sessions[worker], ids->ref(), tgt, options);
  });

  std::vector<PairScore> out(sources.size());
  for (size_t b = 0; b < starts.size(); ++b) {
    if (!found[b])
      return found[b].status();
    for (size_t i = starts[b]; i < batchEnd(b); ++i) {
      size_t pair = order[i];
      PairScore &score = out[pair];
      score.tokenLogProbs = std::move((*found[b])[i - starts[b]]);
      // Summed in order, in double, as the search sums a hypothesis.
      for (float lp : score.tokenLogProbs)
        score.logProb += lp;
      score.score = score.logProb /
                    runtime::lengthPenalty(int64_t(score.tokenLogProbs.size()),
                                           o.alpha, o.powerLengthPenalty);
      for (int32_t id : tgtIds[pair])
        score.tokens.push_back(tokenizer.piece(id));
      score.tokens.push_back(tokenizer.piece(abi::kEosId));
    }
  }
  return out;
}

} // namespace loom
