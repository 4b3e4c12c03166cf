//===- Decoding.h - Decoding with a compiled model --------------*- C++ -*-===//
//
// Greedy decoding and beam search on a session's @encode and @decode_step:
// the encoder and the cross-attention K/V once per batch, then one position
// per step with the self-attention K/V cached and appended. The hypotheses
// of a sentence share its cross-attention K/V (@decode_step reads them as
// the query rows of one attention), and a sentence that has finished leaves
// the batch, in beam search and (a few at a time) in greedy decoding. Written
// against the Session and the Device's primitives (row gathers, per-row top-k
// and argmax), so the scores and the caches stay in the device's memory and
// only the chosen tokens come to the host.
//
// A log-softmax cannot give NaN, +Inf or a best log-probability of -Inf, so
// the values that come to the host are checked, which costs nothing beside
// a step: one that is not a log-probability stops decoding with
// InvalidArgument naming the sentence and the step ("@decode_step produced
// NaN in 'log_probs' for sentence 2 at step 5; ..."), since its ranking
// would be meaningless.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DECODING_H
#define LOOM_RUNTIME_DECODING_H

#include "runtime/DecodingControls.h"
#include "runtime/Session.h"

#include "abi/ModelAbi.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace loom::runtime {

struct GreedyOptions {
  int64_t maxLen = 64; // tokens generated at most, eos included
  int32_t bos = abi::kBosId;
  int32_t eos = abi::kEosId;
  /// Stop once every sentence has produced eos; off, decode maxLen steps.
  bool stopAtEos = true;
};

/// The tokens of each sentence of `src` ([batch, len] i32 on the host,
/// 0-padded), eos and what follows it left out.
ErrorOr<std::vector<std::vector<int32_t>>>
greedyDecode(Session &session, const TensorRef &src,
             const GreedyOptions &options);

/// Sentences that join a beam search already running (in-flight
/// batching), with what BeamOptions gives per sentence.
struct JoiningSentences {
  Tensor src; // [n, len] i32 on the host, 0-padded; none: no sentence joins
  std::vector<int64_t> maxLens;               // one per sentence
  std::vector<int64_t> sentenceNumbers;       // one per sentence
  std::vector<std::vector<int32_t>> prefixes; // none, or one per sentence
  std::vector<uint64_t> seeds;                // one per sentence, sampling
};

struct Hypothesis {
  std::vector<int32_t> tokens; // eos left out
  double logProb = 0;          // sum of the tokens' log-probabilities
  double score = 0;            // logProb / length penalty
  /// With BeamOptions::alignmentLayer, per token the source position the
  /// step that chose it attended to most.
  std::vector<int32_t> alignment;
};

struct BeamOptions {
  int64_t beam = 4;
  double alpha = 0.6;  // length penalty ((5 + len) / 6)^alpha
  /// The length penalty len^alpha instead (CTranslate2's length_penalty;
  /// at alpha 1 a score is the mean log-probability per token).
  bool powerPenalty = false;
  int64_t maxLen = 64; // tokens generated at most, eos included
  /// Eos is refused as any of the first minLen tokens (with minLen =
  /// maxLen, every hypothesis has maxLen tokens: a benchmark's fixed length).
  int64_t minLen = 0;
  /// Per sentence, when given: its own maxLen (e.g. from its length).
  std::vector<int64_t> maxLens;
  /// Per sentence, when given: how messages number it (e.g. its line in the
  /// input); else its row in `src`, from 1.
  std::vector<int64_t> sentenceNumbers;
  int64_t nbest = 1; // hypotheses returned per sentence, best first
  int32_t bos = abi::kBosId;
  int32_t eos = abi::kEosId;
  /// Whether the caller reads the hypotheses' logProb and score. Where the
  /// search itself needs no log-probability (beam 1, nbest 1, alpha 0: it
  /// compares only the tokens of one row) and the step returns logits, a
  /// caller without them spares each row its log-sum-exp (as CTranslate2's
  /// greedy search does without return_scores); logProb and score are then
  /// 0. The tokens are the same either way.
  bool scores = true;
  /// Repetition penalty, banned n-grams and sequences (DecodingControls.h).
  DecodingControls controls;
  /// Per sentence, when given: tokens every hypothesis starts with (empty:
  /// none), each scored by its log-probability as a chosen token is. Shorter
  /// than the sentence's maxLen.
  std::vector<std::vector<int32_t>> prefixes;
  /// Whether each hypothesis also returns its alignment, from decoder layer
  /// `alignmentLayer`'s cross-attention (averaged over the heads;
  /// @decode_step_align): from 0, or from the last at -1, -2, ...
  bool alignments = false;
  int64_t alignmentLayer = -1;
  /// Sampling instead of search, with beam 1: each step draws the next token
  /// from the row's distribution at `temperature`, restricted to its `topK`
  /// most likely tokens (0: all) and, within those, to the fewest whose
  /// probabilities sum to `topP`. A sentence draws from its own generator,
  /// seeded by `seeds` (one per sentence), once per step, so what it draws
  /// does not depend on its batchmates. A token scores its untempered
  /// log-probability.
  struct Sampling {
    bool on = false;
    double temperature = 1;
    int64_t topK = 0;
    double topP = 1;
    std::vector<uint64_t> seeds;
  } sampling;
  /// In-flight batching: called before each step but the first with how
  /// many more sentences the batch takes (maxSentences less those
  /// decoding), when that is at least one; the sentences it returns join
  /// the search there (DecoderState::join) and decode as they would alone.
  /// The search still ends once no sentence is left decoding.
  /// Needs an executable whose @decode_step takes per-sentence starts.
  std::function<ErrorOr<JoiningSentences>(int64_t room)> join;
  int64_t maxSentences = 0;
  /// Called as each sentence's search ends, with the sentence (its row in
  /// `src`, then those that joined numbered on in order) and its n-best,
  /// which beamSearch then does not return.
  std::function<void(int64_t sentence, std::vector<Hypothesis> nbest)> finished;
};

/// Beam search over `src` ([batch, len] i32 on the host, 0-padded): per
/// sentence the `nbest` best hypotheses by score. Every hypothesis of every
/// sentence is one row of @decode_step; after each step the self-attention
/// caches are gathered to follow the surviving hypotheses, and a sentence
/// whose beam has finished (maxLen reached, no live hypothesis left, or none
/// able to score above its `nbest` finished ones, which leaves the result
/// as decoding on to maxLen would) leaves the batch, its rows dropped from
/// the caches and its source from the encoder's K/V. Every hypothesis that
/// ends in eos competes for the n best, however many ended before it. With
/// beam 1 this is greedy decoding.
ErrorOr<std::vector<std::vector<Hypothesis>>>
beamSearch(Session &session, const TensorRef &src, const BeamOptions &options);

/// The length penalty a hypothesis of `length` tokens (eos counted where it
/// ended with one) divides its log-probability by: GNMT's
/// ((5 + length) / 6)^alpha, as Marian and OpenNMT apply it; or, `power`,
/// length^alpha (CTranslate2's length_penalty: at alpha 1 a score is the
/// mean log-probability per token).
double lengthPenalty(int64_t length, double alpha, bool power);

/// The index from 0 of decoder layer `layer` (from 0, or from the last at
/// -1) of `session`'s model, whose searches can return alignments from it:
/// the executable has @decode_step_align, the device ranks logits (the
/// entry returns logits, and only such a device makes the log-probabilities
/// a search keeps from them), and the layer exists. The message names what
/// is missing.
ErrorOr<int64_t> alignmentLayerIndex(const Session &session, int64_t layer);

/// Whether `sampling`'s values can be drawn with (a finite temperature
/// above 0, top-p in (0, 1], top-k not negative) and, when it is on, the
/// search draws one translation (`beam` and `nbest` 1). The message names
/// what is wrong. The seeds are beamSearch's to check against its batch.
Status checkSampling(const BeamOptions::Sampling &sampling, int64_t beam,
                     int64_t nbest);

/// Whether a sentence's beam search can stop with what it has: its
/// `nbest`-th best finished score is at least any score a live hypothesis
/// (log-probabilities `liveLogProbs`) could still reach. A hypothesis'
/// log-probability only falls as it grows, and its length penalty
/// ((5 + len) / 6)^alpha, or len^alpha where `powerPenalty`, alpha >= 0, is
/// at most that of `maxLen` tokens, so
/// a live log-probability over penalty(maxLen) bounds its future scores.
/// Stopping then returns exactly what decoding on to maxLen would (a later
/// hypothesis could at best tie, and ties keep the earlier).
bool beamSettled(std::vector<double> finishedScores,
                 const std::vector<double> &liveLogProbs, int64_t nbest,
                 double alpha, int64_t maxLen, bool powerPenalty = false);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_DECODING_H
