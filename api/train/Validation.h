//===- Validation.h - Validation loss and BLEU during training --*- C++ -*-===//
//
// What `loom train` measures on the validation set: the per-token negative
// log-likelihood of the references (no dropout, no label smoothing, from
// @token_log_probs) and the corpus BLEU of greedy translations against the
// reference text, detokenized as `loom translate` prints them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_VALIDATION_H
#define LOOM_API_TRAIN_VALIDATION_H

#include "runtime/Session.h"
#include "text/Bleu.h"
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::train {

struct ValidationSet {
  std::vector<std::vector<int64_t>> sources; // ids + eos
  std::vector<std::vector<int64_t>> targets; // bos + ids + eos
  std::vector<std::string> references;       // the target text
};

struct ValidationLimits {
  /// Padded tokens per batch (per side), and sentences per batch: the
  /// bounds the model was compiled for.
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  /// The longest sequence the model takes; greedy outputs stop there.
  int64_t maxLen = 256;
};

struct ValidationResult {
  double nll = 0; // mean per target token
  int64_t tokens = 0;
  text::BleuScore bleu;
  std::vector<std::string> hypotheses; // in the set's order
  double seconds = 0;
};

ErrorOr<ValidationResult> validate(runtime::Session &session,
                                   const ValidationSet &set,
                                   const text::Tokenizer &tokenizer,
                                   const ValidationLimits &limits);

} // namespace loom::train

#endif // LOOM_API_TRAIN_VALIDATION_H
