//===- DecoderState.h - What a decoder keeps between steps ------*- C++ -*-===//
//
// What beam search, greedy decoding and scoring share: per sentence the
// source and the encoder's cross-attention K/V, per hypothesis (one row of
// @decode_step) the self-attention caches, and a step that appends its
// position to those caches in place. Internal to the runtime's decoders
// (Decoding.h, Scoring.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DECODERSTATE_H
#define LOOM_RUNTIME_DECODERSTATE_H

#include "runtime/Session.h"

#include "abi/ModelAbi.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::runtime {

/// The log-probabilities of a step's `scores` ([rows, vocab], on the
/// device) at flat indices `cells`, cell c in row rows[c]: the values read
/// where they lie, less their row's log-sum-exp where they are `logits` (the
/// number topKLogSoftmax subtracts, so that a token read here scores as the
/// search would rank it).
ErrorOr<std::vector<float>> logProbsAt(Device &device, const Tensor &scores,
                                       const std::vector<int64_t> &cells,
                                       const std::vector<int64_t> &rows,
                                       bool logits);

/// Whether every token of `tokens` lies in a vocabulary of `vocab`; else
/// InvalidArgument: "`what` holds token T, outside the vocabulary of V".
Status checkInVocabulary(const std::vector<int32_t> &tokens, int64_t vocab,
                         const std::string &what);

/// Log-probabilities come from a log-softmax, so the best of a row is at
/// least -log(vocab) and none is NaN or +Inf; the best logit of a row is a
/// number too. Anything else means the model overflowed (finite parameters
/// too large for f32 arithmetic) or was miscompiled. Decoding stops rather
/// than rank such rows: NaN ranks below every number, and a row of NaN
/// would quietly decode as token 0. `entry` and `output` name where the
/// value came from.
Status nonFiniteScore(const char *entry, const char *output, double value,
                      int64_t sentence, int64_t step);

/// One self-attention cache ("self_k.0"), position first: [length, sentences,
/// beam, heads, head_dim], the prefix of a buffer with room for every
/// position decoding may reach, which each @decode_step appends to in place.
/// Following the hypotheses gathers every position's rows into a second
/// buffer of the same room, and the two swap.
struct SelfCache {
  std::string name;
  Tensor room[2];
  int current = 0;
};

/// What @decode_step reads besides the tokens and the position, in the
/// device's memory: per sentence the source ids and the encoder's
/// cross-attention K/V, per hypothesis the self-attention caches.
struct DecoderState {
  Tensor src;
  std::map<std::string, Tensor> cross; // "cross_k.0", ...
  // Where keep() gathers the next src and cross caches to, then swaps: the
  // sentences only get fewer, so each buffer has room for any later set,
  // and a sentence leaving costs a copy of the rest, with no allocation
  // (on the CPU, an allocation is zeroed and faulted in page by page).
  Tensor spareSrc;
  std::map<std::string, Tensor> spareCross;
  std::vector<SelfCache> self;
  int64_t sentences = 0, beam = 1;  // hypotheses per sentence
  int64_t length = 0, capacity = 0; // positions held, and room for
  /// Per sentence, the first position of the caches that is its own (0
  /// unless it joined later); its next token is at position length - start.
  std::vector<int64_t> starts;
  DType dtype = DType::F32;

  /// Runs @encode on host `src`: the sources and cross-attention K/V of a
  /// state whose self caches are named but have no room yet.
  static ErrorOr<DecoderState> encode(Session &session, const TensorRef &src,
                                      int64_t beam);
  /// Runs @encode on host `src`; each sentence gets `beam` hypotheses whose
  /// self-attention caches start empty, with room for `steps` positions.
  static ErrorOr<DecoderState> start(Session &session, const TensorRef &src,
                                     int64_t beam, int64_t steps);
  /// Steps through @decode_step_logits instead of @decode_step where the
  /// executable has it (one from before it was added has not): step() then
  /// returns logits. Before the first step.
  void preferLogits(const Session &session) {
    readsLogits = session.hasEntry(abi::kDecodeStepLogits);
  }
  /// One step of entry() on `tokens`, hypothesis j of sentence s at
  /// s * beam + j: appends the position to the self-attention caches and
  /// returns its scores() output, [rows, vocab].
  ErrorOr<Tensor> step(Session &session, const std::vector<int32_t> &tokens);
  /// Whether @decode_step takes each sentence's start (abi::kStart), which
  /// join() needs; an executable from before it was added does not.
  static bool canJoin(const Session &session);
  /// canJoin, or Unsupported saying to recompile.
  static Status checkCanJoin(const Session &session);
  /// The sentences of host `src` ([n, len] i32, 0-padded) join those
  /// decoding, after them, `beam` rows each, with room for `steps` more
  /// positions: @encode runs on them, the sources and cross-attention K/V
  /// take the longest source among the running and joining sentences
  /// (padded as a batch pads), and their self-attention caches start at the
  /// caches' length (the positions before are zeros that their step masks
  /// out). Positions no sentence reads any more (before every start) are
  /// dropped on the way. Between steps, while sentences are decoding.
  Status join(Session &session, const TensorRef &src, int64_t steps);
  /// Steps through @decode_step_align instead, which also returns each
  /// decoder layer's cross-attention weights; step() then keeps those of
  /// `layer` (from 0, or from the last at -1) in `alignment`. Refused as
  /// alignmentLayerIndex (Decoding.h) refuses. Before the first step.
  Status askAlignments(const Session &session, int64_t layer);
  /// Whether step() runs @decode_step_logits (or @decode_step_align), and
  /// the entry and output that follow from it.
  bool readsLogits = false;
  int64_t alignmentLayer = -1;
  const char *entry() const {
    if (alignmentLayer >= 0)
      return abi::kDecodeStepAlign;
    return readsLogits ? abi::kDecodeStepLogits : abi::kDecodeStep;
  }
  /// The last step's weights of the asked layer, [sentences, beam, src_len]
  /// on the device: where each row looked in its source.
  Tensor alignment;
  const char *scores() const {
    return readsLogits ? abi::kLogits : abi::kLogProbs;
  }
  /// Keeps the hypotheses `rows` (each row's self-attention caches, in that
  /// order) of the sentences `keptSentences` (indices into the current ones),
  /// `beam` rows per sentence.
  Status keep(Device &device, const std::vector<int64_t> &keptSentences,
              const std::vector<int64_t> &rows);

  /// What each input of @decode_step is, found by name on the first step.
  struct StepInput {
    enum Kind { Src, Tokens, Position, Start, Cross, Self } kind = Src;
    const Tensor *cross = nullptr; // a value of `cross`, which keep() swaps
    int64_t self = -1;             // index into `self`
  };
  std::vector<StepInput> stepInputs;
  // Kept from one step to the next, so that a step allocates nothing on
  // the host: a decode step of a small model is short enough for a dozen
  // mallocs, and the names copied and compared, to show.
  Tensor ids, at, startAt;
  /// Zeros that join() copies into new rows' positions, kept between joins.
  Tensor zeros;
  std::vector<TensorRef> inputs;
  std::map<std::string, TensorRef> appendInto;

  /// Fills stepInputs and appendInto's names from the entry's inputs.
  Status planStep(Session &session);

  std::vector<int64_t> headShape; // [heads, head_dim]
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_DECODERSTATE_H
