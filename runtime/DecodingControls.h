//===- DecodingControls.h - What a hypothesis may say next ------*- C++ -*-===//
//
// Controls that translators ask of a search beyond its width and length
// penalty (CTranslate2's and Hugging Face's names in brackets): a
// repetition penalty [repetition_penalty], no n-gram twice in a hypothesis
// [no_repeat_ngram_size], and token sequences no hypothesis may contain
// [suppress_sequences; one token: never emitted]. Each becomes, per live
// hypothesis and step, edits of that row's scores before they are ranked
// (Device::editScores): a ban is -inf; a penalty divides a positive score
// by it and multiplies a negative one. Where the step returns logits (the
// CPU's beam search) the edits apply to the logits and the log-softmax is
// taken of the edited row, so a hypothesis' log-probability is that of the
// distribution it was chosen from. For the hypothesis "a b a" (ids 5 6 5):
//
//   no-repeat 2          ban 6 (the bigram "a b" would repeat)
//   forbidden {{5, 7}}   ban 7 (the hypothesis ends in 5)
//   repetition 1.2       penalize 5 and 6, once each
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DECODINGCONTROLS_H
#define LOOM_RUNTIME_DECODINGCONTROLS_H

#include "runtime/Device.h"

#include <cstdint>
#include <vector>

namespace loom::runtime {

struct DecodingControls {
  /// > 1 makes the tokens a hypothesis holds less likely; 1: none.
  double repetitionPenalty = 1;
  /// > 0: no n-gram of this many tokens appears twice in a hypothesis.
  int64_t noRepeatNgram = 0;
  /// Token sequences no hypothesis contains (a single token: never next).
  std::vector<std::vector<int32_t>> forbidden;

  /// Whether any control is on (off, a step's scores are not touched).
  bool any() const {
    return repetitionPenalty != 1 || noRepeatNgram > 0 || !forbidden.empty();
  }
};

/// Whether `controls` can be applied to scores of `vocab` tokens: a finite
/// positive penalty, a non-negative n-gram size, non-empty sequences of
/// tokens within the vocabulary. The message names the control.
Status checkDecodingControls(const DecodingControls &controls, int64_t vocab);

/// Appends to `edits` those of the hypothesis `tokens` (bos left out), on
/// row `row` of scores with `vocab` columns.
void appendScoreEdits(const DecodingControls &controls,
                      const std::vector<int32_t> &tokens, int64_t row,
                      int64_t vocab, std::vector<Device::ScoreEdit> &edits);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_DECODINGCONTROLS_H
