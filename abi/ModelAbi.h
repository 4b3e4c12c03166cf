//===- ModelAbi.h - The names a compiled model is called by -----*- C++ -*-===//
//
// The frontend names a model's functions, their inputs and outputs; the
// optimizer and the memory plan name the state they update; the runtime's
// drivers (decoding, the training step) find what they bind by those names.
// They meet here, so a renamed input is a compile error on both sides rather
// than an executable that the runtime cannot drive.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_MODELABI_H
#define LOOM_ABI_MODELABI_H

#include <cstdint>
#include <string>

namespace loom::abi {

// Entry points.
inline constexpr const char kLoss[] = "loss";
inline constexpr const char kLossGrad[] = "loss_grad";
inline constexpr const char kTrainStep[] = "train_step";
inline constexpr const char kTokenLogProbs[] = "token_log_probs";
inline constexpr const char kEncode[] = "encode";
inline constexpr const char kDecodeStep[] = "decode_step";
// @decode_step without its last log-softmax: what the searches read where
// they can (a row's tokens rank the same among its logits).
inline constexpr const char kDecodeStepLogits[] = "decode_step_logits";
// @decode_step_logits with each decoder layer's cross-attention weights,
// averaged over the heads (kAlignmentPrefix): a search's alignments.
inline constexpr const char kDecodeStepAlign[] = "decode_step_align";

// Inputs.
inline constexpr const char kSrc[] = "src";       // [batch, src_len] i32
inline constexpr const char kTgt[] = "tgt";       // [batch, tgt_len] i32
inline constexpr const char kSeed[] = "seed";     // i64: dropout's seed
inline constexpr const char kStep[] = "step";     // i64: Adam's step, from 1
inline constexpr const char kTokens[] = "tokens"; // [batch, beam] i32
inline constexpr const char kPosition[] = "position"; // i64
// [batch] i64: per sentence of @decode_step, the first cache position that
// is its own; its tokens' positions count from there. 0 for a sentence that
// started with the batch; a sentence that joined a running batch (`loom
// serve`'s in-flight batching) starts at the caches' length then.
inline constexpr const char kStart[] = "start";
// An imported model's loss: the class of each position of its output.
inline constexpr const char kTargets[] = "targets"; // [..] i64

// Outputs.
inline constexpr const char kLossOutput[] = "loss";    // f32 scalar
inline constexpr const char kLogProbs[] = "log_probs"; // f32
inline constexpr const char kLogits[] = "logits";      // f32
inline constexpr const char kGradPrefix[] = "grad.";   // grad.<param>
// alignment.<layer>: [batch, beam, src_len] f32, hypothesis j of sentence s
// at s * beam + j as in log_probs.
inline constexpr const char kAlignmentPrefix[] = "alignment.";

// Decoder caches, one per decoder layer `i`: the cross-attention keys and
// values of each sentence's source (from @encode), [batch, heads, src_len,
// head_dim], and the self-attention keys and values of each hypothesis's
// positions decoded so far (in and out of @decode_step), position first:
// [length, batch, beam, heads, head_dim]. @decode_step's cache outputs are
// its inputs with one position appended, so a caller that gives the cache
// room writes them in place (Session::run's appendInto). @decode_step's
// log_probs are [batch * beam, vocab], hypothesis j of sentence s in row s *
// beam + j.
inline constexpr const char kCrossKeyPrefix[] = "cross_k.";
inline constexpr const char kCrossValuePrefix[] = "cross_v.";
inline constexpr const char kSelfKeyPrefix[] = "self_k.";
inline constexpr const char kSelfValuePrefix[] = "self_v.";
inline constexpr const char kCrossPrefix[] = "cross_";
inline constexpr const char kSelfPrefix[] = "self_";

// Optimizer state and the updated parameters @train_step returns, each
// written over the state it replaces: param.<p> over parameter <p>,
// exp_avg.<p> and exp_avg_sq.<p> over themselves.
inline constexpr const char kUpdatedParamPrefix[] = "param.";
inline constexpr const char kFirstMomentPrefix[] = "exp_avg.";
inline constexpr const char kSecondMomentPrefix[] = "exp_avg_sq.";

/// The cache of decoder layer `layer` named by `prefix`.
inline std::string cacheName(const char *prefix, int64_t layer) {
  return prefix + std::to_string(layer);
}

/// Whether `name` starts with `prefix`.
inline bool hasPrefix(const std::string &name, const char *prefix) {
  return name.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
}

// Special token ids every Loom vocabulary reserves.
inline constexpr int32_t kPadId = 0;
inline constexpr int32_t kUnkId = 1;
inline constexpr int32_t kBosId = 2;
inline constexpr int32_t kEosId = 3;

} // namespace loom::abi

#endif // LOOM_ABI_MODELABI_H
