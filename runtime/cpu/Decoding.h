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

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_DECODING_H
