//===- Decoding.h - Decoding with a compiled model --------------*- C++ -*-===//
//
// Greedy decoding on a CpuModel's @encode and @decode_step: the encoder and
// the cross-attention K/V once per batch, then one position per step with
// the self-attention K/V cached and appended.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_DECODING_H
#define LOOM_RUNTIME_CPU_DECODING_H

#include "runtime/cpu/CpuModel.h"

#include <cstdint>
#include <vector>

namespace loom::cpu {

struct GreedyOptions {
  int64_t maxLen = 64; // tokens generated at most, eos included
  int32_t bos = 2;
  int32_t eos = 3;
  /// Stop once every sentence has produced eos; off, decode maxLen steps.
  bool stopAtEos = true;
};

/// The tokens of each sentence of `src` ([batch, len] i32, 0-padded), eos
/// and what follows it left out.
ErrorOr<std::vector<std::vector<int32_t>>>
greedyDecode(CpuModel &model, const TensorRef &src,
             const GreedyOptions &options);

struct BeamOptions {
  int64_t beam = 4;
  double alpha = 0.6;  // length penalty ((5 + len) / 6)^alpha
  int64_t maxLen = 64; // tokens generated at most, eos included
  /// Per sentence, when given: its own maxLen (e.g. from its length).
  std::vector<int64_t> maxLens;
  int64_t nbest = 1; // hypotheses returned per sentence, best first
  int32_t bos = 2;
  int32_t eos = 3;
};

struct Hypothesis {
  std::vector<int32_t> tokens; // eos left out
  double logProb = 0;          // sum of the tokens' log-probabilities
  double score = 0;            // logProb / length penalty
};

/// Beam search over `src` ([batch, len] i32, 0-padded): per sentence the
/// `nbest` best hypotheses by score. Every hypothesis of every sentence is
/// one row of @decode_step; after each step the caches are gathered to
/// follow the surviving hypotheses, and a sentence whose beam has finished
/// (`beam` hypotheses ended in eos, or maxLen reached) leaves the batch,
/// its rows dropped from the caches and the encoder's K/V. With beam 1 this
/// is greedy decoding.
ErrorOr<std::vector<std::vector<Hypothesis>>>
beamSearch(CpuModel &model, const TensorRef &src, const BeamOptions &options);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_DECODING_H
