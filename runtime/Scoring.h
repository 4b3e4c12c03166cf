//===- Scoring.h - The log-probability of given translations ----*- C++ -*-===//
//
// Forced decoding: each sentence's given target is fed to @decode_step one
// token at a time (bos first), and the log-probability the step gives the
// next target token, then eos, is read where it lies. The steps are the
// ones beam search takes (same entry, same caches, same log-sum-exp on a
// device that ranks logits), so scoring a translation the search returned
// gives the log-probabilities it summed.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SCORING_H
#define LOOM_RUNTIME_SCORING_H

#include "runtime/Session.h"

#include "abi/ModelAbi.h"

#include <cstdint>
#include <vector>

namespace loom::runtime {

struct ScoringOptions {
  int32_t bos = abi::kBosId;
  int32_t eos = abi::kEosId;
  /// Per sentence, when given: how messages number it; else its row in
  /// `src`, from 1.
  std::vector<int64_t> sentenceNumbers;
};

/// Per sentence of `src` ([batch, len] i32 on the host, 0-padded), the
/// log-probability of each token of `targets[i]` (no bos, no eos) and then
/// of eos: targets[i].size() + 1 values. Tokens outside the vocabulary are
/// refused, naming the sentence; a value that is not a finite
/// log-probability stops scoring as it stops decoding (the model overflows).
/// A sentence whose target has ended leaves the batch with others (an
/// eighth of the rows at a time), as in greedy decoding.
ErrorOr<std::vector<std::vector<float>>>
scoreTargets(Session &session, const TensorRef &src,
             const std::vector<std::vector<int32_t>> &targets,
             const ScoringOptions &options = {});

} // namespace loom::runtime

#endif // LOOM_RUNTIME_SCORING_H
