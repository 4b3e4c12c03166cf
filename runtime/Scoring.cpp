//===- Scoring.cpp - The log-probability of given translations ------------===//

#include "runtime/Scoring.h"
#include "runtime/DecoderState.h"

#include <algorithm>
#include <cmath>

namespace loom::runtime {

ErrorOr<std::vector<std::vector<float>>>
scoreTargets(Session &session, const TensorRef &src,
             const std::vector<std::vector<int32_t>> &targets,
             const ScoringOptions &options) {
  if (src.rank() != 2 || src.dtype != DType::I32)
    return Status::failure("scoring takes [batch, len] i32 ids");
  const int64_t batch = src.shape[0];
  if (int64_t(targets.size()) != batch)
    return Status::failure("scoring got " + std::to_string(targets.size()) +
                           " targets for " + std::to_string(batch) +
                           " sentences");
  if (!options.sentenceNumbers.empty() &&
      int64_t(options.sentenceNumbers.size()) != batch)
    return Status::failure(
        "scoring got " + std::to_string(options.sentenceNumbers.size()) +
        " sentence numbers for " + std::to_string(batch) + " sentences");
  auto sentenceNumber = [&](int64_t s) {
    return options.sentenceNumbers.empty() ? s + 1 : options.sentenceNumbers[s];
  };
  std::vector<std::vector<float>> out(batch);
  if (batch == 0)
    return out;
  // A target of n tokens takes n + 1 steps: bos, then each of its tokens
  // is fed, and the step after the last one scores eos.
  int64_t steps = 0;
  for (const std::vector<int32_t> &target : targets)
    steps = std::max(steps, int64_t(target.size()) + 1);
  Device &device = session.device();
  auto state = DecoderState::start(session, src, 1, steps);
  if (!state)
    return state.status();
  // The entry beam search takes, so that a token's log-probability is the
  // one the search summed: logits less the row's log-sum-exp where the
  // device ranks logits, else the step's log-softmax.
  if (device.ranksLogits())
    state->preferLogits(session);

  // The sentence of each row; a finished sentence's row stays until an
  // eighth of the rows have finished, as in greedyDecode.
  std::vector<int64_t> rowSentence(batch);
  for (int64_t s = 0; s < batch; ++s)
    rowSentence[s] = s;
  auto targetAt = [&](int64_t s, int64_t t) {
    return t < int64_t(targets[s].size()) ? targets[s][t] : options.eos;
  };
  std::vector<int32_t> fed(batch, options.bos);
  for (int64_t t = 0; t < steps; ++t) {
    auto scores = state->step(session, fed);
    if (!scores)
      return scores.status();
    int64_t vocab = scores->shape()[1];
    if (t == 0)
      for (int64_t s = 0; s < batch; ++s)
        LOOM_RETURN_IF_ERROR(checkInVocabulary(
            targets[s], vocab,
            "the target of sentence " + std::to_string(sentenceNumber(s))));
    int64_t rows = int64_t(rowSentence.size());
    // One cell per row whose sentence has a token to score at this step.
    std::vector<int64_t> cells, cellRows;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t s = rowSentence[r];
      if (t > int64_t(targets[s].size()))
        continue;
      cellRows.push_back(r);
      cells.push_back(r * vocab + targetAt(s, t));
    }
    ErrorOr<std::vector<float>> values =
        logProbsAt(device, *scores, cells, cellRows, state->readsLogits);
    if (!values)
      return values.status();
    session.recycle(std::move(*scores));
    for (size_t c = 0; c < cells.size(); ++c) {
      int64_t s = rowSentence[cellRows[c]];
      float value = (*values)[c];
      if (!std::isfinite(value))
        return nonFiniteScore(state->entry(), state->scores(), value,
                              sentenceNumber(s), t + 1);
      out[s].push_back(value);
    }
    if (t + 1 == steps)
      break;
    // The next tokens; rows whose target has ended leave together.
    std::vector<int64_t> kept;
    for (int64_t r = 0; r < rows; ++r)
      if (t < int64_t(targets[rowSentence[r]].size()))
        kept.push_back(r);
    int64_t finished = rows - int64_t(kept.size());
    if (finished > 0 && finished >= std::max<int64_t>(1, rows / 8)) {
      LOOM_RETURN_IF_ERROR(state->keep(device, kept, kept));
      std::vector<int64_t> keptSentences;
      for (int64_t r : kept)
        keptSentences.push_back(rowSentence[r]);
      rowSentence = std::move(keptSentences);
    }
    fed.clear();
    for (int64_t s : rowSentence)
      fed.push_back(targetAt(s, t));
  }
  return out;
}

} // namespace loom::runtime
