//===- Decoding.cpp - Decoding with a compiled model ----------------------===//

#include "runtime/Decoding.h"
#include "runtime/DecoderState.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>

namespace loom::runtime {

namespace {

/// One sentence's beam: its live hypotheses (rows of the batch, in order)
/// and those that ended.
struct Beam {
  int64_t sentence = 0;
  int64_t started = 0; // the step it joined at; its own steps count from it
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<int32_t>> alignments; // per live one, when asked
  std::vector<double> logProbs;
  std::vector<Hypothesis> finished;
};

struct Candidate {
  double logProb;
  int64_t parent; // index into the beam
  int32_t token;
};

/// beamSettled on a sentence's beam.
bool sentenceSettled(const Beam &beam, int64_t nbest, double alpha,
                     int64_t maxLen, bool power) {
  std::vector<double> scores;
  for (const Hypothesis &h : beam.finished)
    scores.push_back(h.score);
  return beamSettled(scores, beam.logProbs, nbest, alpha, maxLen, power);
}

/// Orders the `k` hypotheses `grown` just got (and their entries at the end
/// of `parents` and `last`) so that each sits on its parent's row where no
/// sibling sits first: a parent's first child then keeps the parent's caches
/// where they are (DecoderState::keep), and only later children move, into
/// the rows of parents that had none. `firstRow` is the beam's first row.
void placeOnParentRows(Beam &grown, std::vector<int64_t> &parents,
                       std::vector<int32_t> &last, int64_t firstRow,
                       int64_t k) {
  size_t base = parents.size() - size_t(k);
  std::vector<int64_t> place(k, -1);
  std::vector<bool> taken(k, false);
  for (int64_t j = 0; j < k; ++j) {
    int64_t parent = parents[base + j] - firstRow;
    if (!taken[parent]) {
      place[j] = parent;
      taken[parent] = true;
    }
  }
  int64_t free = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (place[j] >= 0)
      continue;
    while (taken[free])
      ++free;
    place[j] = free;
    taken[free] = true;
  }
  Beam placed;
  placed.tokens.resize(k);
  placed.logProbs.resize(k);
  placed.alignments.resize(grown.alignments.size());
  std::vector<int64_t> placedParents(k);
  std::vector<int32_t> placedLast(k);
  for (int64_t j = 0; j < k; ++j) {
    placed.tokens[place[j]] = std::move(grown.tokens[j]);
    placed.logProbs[place[j]] = grown.logProbs[j];
    if (!grown.alignments.empty())
      placed.alignments[place[j]] = std::move(grown.alignments[j]);
    placedParents[place[j]] = parents[base + j];
    placedLast[place[j]] = last[base + j];
  }
  grown.tokens = std::move(placed.tokens);
  grown.logProbs = std::move(placed.logProbs);
  grown.alignments = std::move(placed.alignments);
  std::copy(placedParents.begin(), placedParents.end(), parents.begin() + base);
  std::copy(placedLast.begin(), placedLast.end(), last.begin() + base);
}

} // namespace

double lengthPenalty(int64_t length, double alpha, bool power) {
  if (power)
    return std::pow(double(std::max<int64_t>(1, length)), alpha);
  return std::pow((5.0 + double(length)) / 6.0, alpha);
}

bool beamSettled(std::vector<double> finishedScores,
                 const std::vector<double> &liveLogProbs, int64_t nbest,
                 double alpha, int64_t maxLen, bool powerPenalty) {
  if (nbest < 1 || int64_t(finishedScores.size()) < nbest || alpha < 0)
    return false;
  std::nth_element(finishedScores.begin(), finishedScores.begin() + (nbest - 1),
                   finishedScores.end(), std::greater<double>());
  double bestLive = -std::numeric_limits<double>::infinity();
  for (double logProb : liveLogProbs)
    bestLive = std::max(bestLive, logProb);
  return finishedScores[nbest - 1] >=
         bestLive / lengthPenalty(maxLen, alpha, powerPenalty);
}

ErrorOr<int64_t> alignmentLayerIndex(const Session &session, int64_t layer) {
  if (!session.hasEntry(abi::kDecodeStepAlign))
    return Status::failure("this executable has no @decode_step_align, so it "
                           "cannot return alignments: it was compiled by an "
                           "earlier Loom; compile it again",
                           ErrorCode::Unsupported);
  if (!session.device().ranksLogits())
    return Status::failure("alignments are returned on the CPU only",
                           ErrorCode::Unsupported);
  // Each decoder layer reads its own cross-attention keys.
  int64_t layers = 0;
  for (const std::string &name : session.inputNames(abi::kDecodeStepAlign))
    layers += abi::hasPrefix(name, abi::kCrossKeyPrefix);
  int64_t index = layer < 0 ? layers + layer : layer;
  if (index < 0 || index >= layers)
    return Status::failure(
        "the alignment layer " + std::to_string(layer) +
            " is not among the model's " + std::to_string(layers) +
            " decoder layers (0 to " + std::to_string(layers - 1) +
            ", or -1 to -" + std::to_string(layers) + " from the last)",
        ErrorCode::InvalidArgument);
  return index;
}

Status checkSampling(const BeamOptions::Sampling &sampling, int64_t beam,
                     int64_t nbest) {
  if (sampling.on && (beam != 1 || nbest != 1))
    return Status::failure("sampling draws one translation: it takes beam 1 "
                           "and nbest 1",
                           ErrorCode::InvalidArgument);
  if (!(sampling.temperature > 0) || !std::isfinite(sampling.temperature))
    return Status::failure("the sampling temperature must be a finite "
                           "number above 0, got " +
                               std::to_string(sampling.temperature),
                           ErrorCode::InvalidArgument);
  if (!(sampling.topP > 0 && sampling.topP <= 1))
    return Status::failure("the sampling top-p must lie in (0, 1], got " +
                               std::to_string(sampling.topP),
                           ErrorCode::InvalidArgument);
  if (sampling.topK < 0)
    return Status::failure("the sampling top-k must not be negative, got " +
                               std::to_string(sampling.topK),
                           ErrorCode::InvalidArgument);
  return Status::success();
}

ErrorOr<std::vector<std::vector<int32_t>>>
greedyDecode(Session &session, const TensorRef &src,
             const GreedyOptions &options) {
  if (src.rank() != 2 || src.dtype != DType::I32)
    return Status::failure("greedy decoding takes [batch, len] i32 ids");
  int64_t batch = src.shape[0];
  auto state = DecoderState::start(session, src, 1, options.maxLen);
  if (!state)
    return state.status();
  // The best token of a row is the best logit's: no log-softmax needed.
  state->preferLogits(session);
  std::vector<int32_t> last(batch, options.bos);
  std::vector<std::vector<int32_t>> out(batch);
  std::vector<bool> done(batch, false);
  // The sentence of each row. A finished sentence's row stays until enough
  // have finished to pay for gathering the caches without them (an eighth
  // of the rows), then they leave the batch together.
  std::vector<int64_t> rowSentence(batch);
  for (int64_t b = 0; b < batch; ++b)
    rowSentence[b] = b;
  Device &device = session.device();
  for (int64_t t = 0; t < options.maxLen; ++t) {
    auto scores = state->step(session, last);
    if (!scores)
      return scores.status();
    int64_t rows = static_cast<int64_t>(rowSentence.size());
    // The best token of each row and its score, which must be finite.
    // Where the device's memory is the host's the value is read in place
    // beside argmax; elsewhere a top-1 brings both.
    std::vector<float> bestValues;
    if (device.sharesHostMemory()) {
      ErrorOr<std::vector<int32_t>> best = device.argmax(scores->ref());
      if (!best)
        return best.status();
      last = std::move(*best);
      int64_t vocab = scores->shape()[1];
      for (int64_t r = 0; r < rows; ++r)
        bestValues.push_back(scores->f32()[r * vocab + last[r]]);
    } else {
      ErrorOr<Device::TopK> top = device.topK(scores->ref(), 1);
      if (!top)
        return top.status();
      last = std::move(top->indices);
      bestValues = std::move(top->values);
    }
    // The next step writes its scores here.
    session.recycle(std::move(*scores));
    int64_t finished = 0; // rows of finished sentences
    for (int64_t r = 0; r < rows; ++r) {
      int64_t b = rowSentence[r];
      if (!done[b] && !std::isfinite(bestValues[r]))
        return nonFiniteScore(state->entry(), state->scores(), bestValues[r],
                              b + 1, t + 1);
      if (!done[b]) {
        if (last[r] == options.eos)
          done[b] = true;
        else
          out[b].push_back(last[r]);
      }
      finished += done[b];
    }
    if (!options.stopAtEos)
      continue;
    if (finished == rows)
      break;
    if (finished == 0 || finished < std::max<int64_t>(1, rows / 8))
      continue;
    std::vector<int64_t> kept;
    std::vector<int32_t> keptLast;
    std::vector<int64_t> keptSentences;
    for (int64_t r = 0; r < rows; ++r) {
      if (done[rowSentence[r]])
        continue;
      kept.push_back(r);
      keptLast.push_back(last[r]);
      keptSentences.push_back(rowSentence[r]);
    }
    LOOM_RETURN_IF_ERROR(state->keep(device, kept, kept));
    last = std::move(keptLast);
    rowSentence = std::move(keptSentences);
  }
  return out;
}

ErrorOr<std::vector<std::vector<Hypothesis>>>
beamSearch(Session &session, const TensorRef &src, const BeamOptions &options) {
  if (src.rank() != 2 || src.dtype != DType::I32)
    return Status::failure("beam search takes [batch, len] i32 ids");
  if (options.beam < 1 || options.nbest < 1 || options.nbest > options.beam ||
      options.maxLen < 1)
    return Status::failure("beam search needs beam >= 1, 1 <= nbest <= "
                           "beam and maxLen >= 1");
  const int64_t batch = src.shape[0], k = options.beam;
  if (!options.maxLens.empty() && int64_t(options.maxLens.size()) != batch)
    return Status::failure(
        "beam search got " + std::to_string(options.maxLens.size()) +
        " maximum lengths for " + std::to_string(batch) + " sentences");
  if (!options.sentenceNumbers.empty() &&
      int64_t(options.sentenceNumbers.size()) != batch)
    return Status::failure(
        "beam search got " + std::to_string(options.sentenceNumbers.size()) +
        " sentence numbers for " + std::to_string(batch) + " sentences");
  // Per sentence, those of `src` first and then those that join.
  std::vector<int64_t> maxLens, numbers;
  std::vector<std::vector<int32_t>> prefixes;
  for (int64_t s = 0; s < batch; ++s) {
    maxLens.push_back(std::max<int64_t>(
        1, options.maxLens.empty() ? options.maxLen : options.maxLens[s]));
    numbers.push_back(
        options.sentenceNumbers.empty() ? s + 1 : options.sentenceNumbers[s]);
  }
  auto sentenceNumber = [&](int64_t sentence) { return numbers[sentence]; };
  auto maxLenOf = [&](int64_t sentence) { return maxLens[sentence]; };
  if (!options.prefixes.empty() && int64_t(options.prefixes.size()) != batch)
    return Status::failure(
        "beam search got " + std::to_string(options.prefixes.size()) +
        " target prefixes for " + std::to_string(batch) + " sentences");
  const BeamOptions::Sampling &sampling = options.sampling;
  if (sampling.on) {
    LOOM_RETURN_IF_ERROR(checkSampling(sampling, k, options.nbest));
    if (int64_t(sampling.seeds.size()) != batch)
      return Status::failure(
          "sampling got " + std::to_string(sampling.seeds.size()) +
          " seeds for " + std::to_string(batch) + " sentences");
  }
  std::vector<std::mt19937_64> generators;
  for (uint64_t seed : sampling.seeds)
    generators.emplace_back(seed);
  // Empty, or one per sentence: a step allocates nothing for prefixes
  // until a sentence has one.
  prefixes = options.prefixes;
  static const std::vector<int32_t> noPrefix;
  auto prefixOf = [&](int64_t sentence) -> const std::vector<int32_t> & {
    return prefixes.empty() ? noPrefix : prefixes[sentence];
  };
  auto checkPrefixRoom = [&](int64_t s) {
    if (int64_t(prefixOf(s).size()) < maxLenOf(s))
      return Status::success();
    return Status::failure(
        "the target prefix of sentence " + std::to_string(sentenceNumber(s)) +
            " has " + std::to_string(prefixOf(s).size()) +
            " tokens, and at most " + std::to_string(maxLenOf(s)) +
            " tokens may be decoded: it leaves no room for the translation",
        ErrorCode::InvalidArgument);
  };
  for (int64_t s = 0; s < batch; ++s)
    LOOM_RETURN_IF_ERROR(checkPrefixRoom(s));
  int64_t steps = 0;
  for (int64_t s = 0; s < batch; ++s)
    steps = std::max(steps, maxLenOf(s));
  if (options.join)
    LOOM_RETURN_IF_ERROR(DecoderState::checkCanJoin(session));
  const double minusInf = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<Hypothesis>> results(batch);
  if (batch == 0)
    return results;
  Device &device = session.device();

  // Every sentence's rows repeat its source and encoder K/V `k` times.
  auto state = DecoderState::start(session, src, k, steps);
  if (!state)
    return state.status();
  // A device that ranks a row's logits and subtracts its log-sum-exp on the
  // way reads them as they come from the generator: no log-softmax is
  // written and read again.
  if (device.ranksLogits())
    state->preferLogits(session);
  const bool aligns = options.alignments;
  if (aligns)
    LOOM_RETURN_IF_ERROR(state->askAlignments(session, options.alignmentLayer));
  // The live hypotheses of `beam` end with the tokens they have (no eos),
  // into `finished`: out of steps, or with nothing left to say.
  auto endAsTheyAre = [&](const Beam &beam, std::vector<Hypothesis> &finished) {
    for (size_t j = 0; j < beam.tokens.size(); ++j)
      finished.push_back(
          {beam.tokens[j], beam.logProbs[j],
           beam.logProbs[j] / lengthPenalty(int64_t(beam.tokens[j].size()),
                                            options.alpha,
                                            options.powerPenalty),
           aligns ? beam.alignments[j] : std::vector<int32_t>{}});
  };
  // Beam 1 with one result and no length penalty compares only one row's
  // extensions with each other, and a hypothesis ending in eos with its
  // sibling of the same step, which it then beats for good (a log-probability
  // only falls, and alpha 0 divides by 1). The logits of one row rank as
  // its log-probabilities do, so without scores to return the row's
  // log-sum-exp is not needed: the sums below are of logits, and the search
  // takes the same decisions.
  const bool ranksRawLogits = !options.scores && k == 1 && options.nbest == 1 &&
                              options.alpha == 0 && state->readsLogits;

  // A sentence's n-best, returned or handed to options.finished.
  auto deliver = [&](int64_t sentence, std::vector<Hypothesis> nbest) {
    if (ranksRawLogits)
      for (Hypothesis &h : nbest)
        h.logProb = h.score = 0;
    if (options.finished)
      options.finished(sentence, std::move(nbest));
    else
      results[sentence] = std::move(nbest);
  };

  // A sentence's beam before its first step (at step `started`), and its
  // rows' bos.
  std::vector<Beam> beams;
  std::vector<int32_t> last;
  auto startBeam = [&](int64_t sentence, int64_t started) {
    Beam beam;
    beam.sentence = sentence;
    beam.started = started;
    beam.tokens.assign(k, {});
    if (aligns)
      beam.alignments.assign(k, {});
    // The k rows start equal: only the first may expand at the first step.
    beam.logProbs.assign(k, minusInf);
    beam.logProbs[0] = 0;
    beams.push_back(std::move(beam));
    last.insert(last.end(), size_t(k), options.bos);
  };
  for (int64_t s = 0; s < batch; ++s)
    startBeam(s, 0);
  int64_t vocab = 0; // known from the first step on

  // Sentences that join before step t (options.join): after those
  // decoding, each with k fresh rows.
  auto joinAt = [&](int64_t t) -> Status {
    int64_t room = options.maxSentences - int64_t(beams.size());
    if (room < 1)
      return Status::success();
    ErrorOr<JoiningSentences> more = options.join(room);
    if (!more)
      return more.status();
    const Tensor &src2 = more->src;
    if (!src2.data() || src2.shape().empty() || src2.shape()[0] == 0)
      return Status::success();
    int64_t n = src2.shape()[0];
    if (n > room || int64_t(more->maxLens.size()) != n ||
        int64_t(more->sentenceNumbers.size()) != n ||
        (!more->prefixes.empty() && int64_t(more->prefixes.size()) != n) ||
        (sampling.on && int64_t(more->seeds.size()) != n))
      return Status::failure("sentences joining a search come with " +
                                 std::to_string(n) +
                                 " sources and other "
                                 "counts of their limits, numbers, prefixes "
                                 "or seeds, or more than its room",
                             ErrorCode::Internal);
    int64_t first = int64_t(maxLens.size()), joinSteps = 1;
    for (int64_t i = 0; i < n; ++i) {
      maxLens.push_back(std::max<int64_t>(1, more->maxLens[i]));
      numbers.push_back(more->sentenceNumbers[i]);
      joinSteps = std::max(joinSteps, maxLens.back());
      if (sampling.on)
        generators.emplace_back(more->seeds[i]);
    }
    if (!more->prefixes.empty() && prefixes.empty())
      prefixes.assign(size_t(first), {});
    if (!prefixes.empty())
      for (int64_t i = 0; i < n; ++i)
        prefixes.push_back(more->prefixes.empty() ? std::vector<int32_t>{}
                                                  : more->prefixes[i]);
    for (int64_t i = 0; i < n; ++i) {
      LOOM_RETURN_IF_ERROR(checkPrefixRoom(first + i));
      LOOM_RETURN_IF_ERROR(
          checkInVocabulary(prefixOf(first + i), vocab,
                            "the target prefix of sentence " +
                                std::to_string(sentenceNumber(first + i))));
    }
    LOOM_RETURN_IF_ERROR(state->join(session, src2.ref(), joinSteps));
    results.resize(maxLens.size());
    for (int64_t i = 0; i < n; ++i)
      startBeam(first + i, t);
    return Status::success();
  };

  // A search ends with its last sentence: a caller that batches in flight
  // starts the next one itself (what a batch waits for is its to decide).
  for (int64_t t = 0; !beams.empty(); ++t) {
    if (options.join && t > 0)
      LOOM_RETURN_IF_ERROR(joinAt(t));
    auto scores = state->step(session, last);
    if (!scores)
      return scores.status();
    // Per row, the source position its step attended to most (the first
    // of equals), which the token it takes is aligned to.
    std::vector<int32_t> attended;
    if (aligns) {
      ErrorOr<Tensor> weights = toHost(state->alignment);
      if (!weights)
        return weights.status();
      int64_t rows = weights->shape()[0] * weights->shape()[1];
      int64_t positions = weights->shape()[2];
      const float *w = weights->f32();
      for (int64_t r = 0; r < rows; ++r) {
        const float *row = w + r * positions;
        attended.push_back(
            int32_t(std::max_element(row, row + positions) - row));
      }
    }
    // The 2k best extensions of a beam hold k that do not end the sentence,
    // and they are among the 2k best of each row: the device ranks each row,
    // and only 2k tokens a row come to the host, as log-probabilities (as
    // logits where ranksRawLogits: the search then needs only their order).
    vocab = scores->shape()[1];
    if (t == 0) {
      LOOM_RETURN_IF_ERROR(checkDecodingControls(options.controls, vocab));
      for (int64_t s = 0; s < int64_t(options.prefixes.size()); ++s)
        LOOM_RETURN_IF_ERROR(
            checkInVocabulary(options.prefixes[s], vocab,
                              "the target prefix of sentence " +
                                  std::to_string(sentenceNumber(s))));
    }
    // Sentences still in their target prefix: each live hypothesis takes
    // the prefix's next token, scored as the search would have scored it
    // (read before any control edits the row; controls do not apply to a
    // forced token). Only the beam's first row lives until the prefix
    // ends, so the prefix is shared by the beam.
    // Left empty without prefixes: a step allocates nothing it need not.
    std::vector<bool> forcing;
    std::vector<float> forced;
    auto isForcing = [&](size_t i) { return !forcing.empty() && forcing[i]; };
    if (!prefixes.empty()) {
      forcing.assign(beams.size(), false);
      forced.assign(beams.size() * k, std::numeric_limits<float>::quiet_NaN());
      std::vector<int64_t> cells, rows;
      for (size_t i = 0; i < beams.size(); ++i) {
        const std::vector<int32_t> &prefix = prefixOf(beams[i].sentence);
        int64_t own = t - beams[i].started;
        if (own >= int64_t(prefix.size()))
          continue;
        forcing[i] = true;
        for (int64_t j = 0; j < k; ++j)
          if (beams[i].logProbs[j] != minusInf) {
            rows.push_back(int64_t(i) * k + j);
            cells.push_back(rows.back() * vocab + prefix[own]);
          }
      }
      if (!cells.empty()) {
        ErrorOr<std::vector<float>> values =
            logProbsAt(device, *scores, cells, rows,
                       state->readsLogits && !ranksRawLogits);
        if (!values)
          return values.status();
        for (size_t c = 0; c < cells.size(); ++c)
          forced[rows[c]] = (*values)[c];
      }
    }
    // A search below its minimum length passes over eos for the next
    // candidate; a draw has no next candidate, so eos is banned from it.
    auto bansEos = [&](const Beam &beam) {
      return sampling.on && t - beam.started + 1 <= options.minLen;
    };
    std::vector<Device::ScoreEdit> edits;
    if (options.controls.any() || (sampling.on && options.minLen > 0)) {
      for (size_t i = 0; i < beams.size(); ++i)
        for (int64_t j = 0; j < k; ++j) {
          bool banEos = bansEos(beams[i]);
          if (isForcing(i) || beams[i].logProbs[j] == minusInf)
            continue;
          int64_t row = int64_t(i) * k + j;
          if (banEos)
            edits.push_back(
                {Device::ScoreEdit::Ban, row * vocab + options.eos});
          if (options.controls.any())
            appendScoreEdits(options.controls, beams[i].tokens[j], row, vocab,
                             edits);
        }
      LOOM_RETURN_IF_ERROR(device.editScores(scores->ref(), edits));
    }
    // Whether the controls banned every token of `row`: its best token
    // (`best`) is banned, so every other is -inf too, and its log-softmax
    // is -inf less -inf, NaN, which is then no overflow. Looked up only for
    // a row whose best value is not a number.
    auto everyTokenBanned = [&](int64_t row, int32_t best) {
      int64_t cell = row * vocab + best;
      return std::any_of(
          edits.begin(), edits.end(), [&](const Device::ScoreEdit &e) {
            return e.kind == Device::ScoreEdit::Ban && e.cell == cell;
          });
    };
    int64_t perRow = std::min<int64_t>(2 * k, vocab);
    if (sampling.on)
      perRow = sampling.topK > 0 ? std::min(sampling.topK, vocab) : vocab;
    ErrorOr<Device::TopK> top =
        state->readsLogits && !ranksRawLogits
            ? device.topKLogSoftmax(scores->ref(), perRow)
            : device.topK(scores->ref(), perRow);
    if (!top)
      return top.status();
    // The next step writes its scores here.
    session.recycle(std::move(*scores));

    std::vector<Beam> next;
    std::vector<int64_t> parents; // rows of this step each next row follows
    std::vector<int64_t> kept;    // sentences (indices into `beams`) kept
    last.clear();
    for (size_t i = 0; i < beams.size(); ++i) {
      Beam &beam = beams[i];
      // The sentence's own step (from 0 at the step it joined).
      const int64_t own = t - beam.started;
      bool lastStep = own + 1 >= maxLenOf(beam.sentence);
      std::vector<Candidate> candidates;
      for (int64_t j = 0; j < k; ++j) {
        if (beam.logProbs[j] == minusInf)
          continue;
        int64_t row = int64_t(i) * k + j;
        if (isForcing(i)) {
          float value = forced[row];
          if (std::isnan(value) ||
              value == -std::numeric_limits<float>::infinity())
            return nonFiniteScore(state->entry(), state->scores(), value,
                                  sentenceNumber(beam.sentence), own + 1);
          candidates.push_back(
              {beam.logProbs[j] + value, j, prefixOf(beam.sentence)[own]});
          continue;
        }
        if (sampling.on) {
          // The row's values are best first; a banned one (-inf) and those
          // after it are out. Weights relative to the best, tempered.
          const float *values = top->values.data() + row * perRow;
          const int32_t *tokens = top->indices.data() + row * perRow;
          if (!std::isfinite(values[0]) && everyTokenBanned(row, tokens[0]))
            continue; // nothing left to draw: the row has no extension
          if (!std::isfinite(values[0]))
            return nonFiniteScore(state->entry(), state->scores(), values[0],
                                  sentenceNumber(beam.sentence), own + 1);
          std::vector<double> weights;
          double total = 0;
          for (int64_t c = 0; c < perRow; ++c) {
            if (std::isnan(values[c]))
              return nonFiniteScore(state->entry(), state->scores(), values[c],
                                    sentenceNumber(beam.sentence), own + 1);
            if (values[c] == -std::numeric_limits<float>::infinity())
              break;
            weights.push_back(
                std::exp(double(values[c] - values[0]) / sampling.temperature));
            total += weights.back();
          }
          // The nucleus: the fewest best tokens whose share reaches topP.
          if (sampling.topP < 1) {
            double sum = 0;
            size_t keep = 0;
            while (keep < weights.size() && sum < sampling.topP * total)
              sum += weights[keep++];
            weights.resize(std::max<size_t>(1, keep));
            total = sum > 0 ? sum : weights[0];
          }
          double u = std::uniform_real_distribution<double>(0, total)(
              generators[beam.sentence]);
          size_t pick = 0;
          for (double sum = weights[0]; sum <= u && pick + 1 < weights.size();
               sum += weights[++pick]) {
          }
          candidates.push_back(
              {beam.logProbs[j] + values[pick], j, tokens[pick]});
          continue;
        }
        for (int64_t c = 0; c < perRow; ++c) {
          // The best value must be finite, the others not NaN (which
          // ranks last, so a NaN here means part of the row is NaN).
          float value = top->values[row * perRow + c];
          // Where controls ban tokens, -inf is a ban: that token and the
          // rest of the row are out.
          bool banned = options.controls.any() &&
                        (value == -std::numeric_limits<float>::infinity() ||
                         (c == 0 && std::isnan(value) &&
                          everyTokenBanned(row, top->indices[row * perRow])));
          if (c == 0 ? !std::isfinite(value) && !banned : std::isnan(value))
            return nonFiniteScore(state->entry(), state->scores(), value,
                                  sentenceNumber(beam.sentence), own + 1);
          if (banned)
            break;

          candidates.push_back(
              {beam.logProbs[j] + value, j, top->indices[row * perRow + c]});
        }
      }
      size_t best = std::min<size_t>(candidates.size(), 2 * k);
      std::partial_sort(candidates.begin(), candidates.begin() + best,
                        candidates.end(),
                        [](const Candidate &a, const Candidate &b) {
                          return a.logProb > b.logProb ||
                                 (a.logProb == b.logProb && a.token < b.token);
                        });
      Beam grown;
      grown.sentence = beam.sentence;
      grown.started = beam.started;
      grown.finished = std::move(beam.finished);
      for (size_t c = 0; c < best && int64_t(grown.tokens.size()) < k; ++c) {
        const Candidate &cand = candidates[c];
        std::vector<int32_t> tokens = beam.tokens[cand.parent];
        if (cand.token == options.eos && own + 1 <= options.minLen)
          continue; // too early to end: the next candidate takes its place
        std::vector<int32_t> alignment;
        if (aligns)
          alignment = beam.alignments[cand.parent];
        if (cand.token == options.eos) {
          // Every hypothesis that ends is kept: one ending after `k` others
          // may still score above them.
          grown.finished.push_back(
              {tokens, cand.logProb,
               cand.logProb / lengthPenalty(int64_t(tokens.size()) + 1,
                                            options.alpha,
                                            options.powerPenalty),
               std::move(alignment)});
          continue;
        }
        tokens.push_back(cand.token);
        grown.tokens.push_back(std::move(tokens));
        grown.logProbs.push_back(cand.logProb);
        if (aligns) {
          alignment.push_back(attended[size_t(i) * k + cand.parent]);
          grown.alignments.push_back(std::move(alignment));
        }
        parents.push_back(int64_t(i) * k + cand.parent);
        last.push_back(cand.token);
      }
      // Every extension of every live hypothesis was banned (or was eos
      // below the minimum length) and fewer than `nbest` have ended: the
      // live ones end as they are, without eos, as at the length limit, so
      // that a sentence always has its n best.
      if (grown.tokens.empty() &&
          int64_t(grown.finished.size()) < options.nbest)
        endAsTheyAre(beam, grown.finished);
      // Not when `k` hypotheses have ended (fairseq's early stopping): a
      // live one may still beat them (on the multi30k model's val
      // sentences at beam 4, stopping there gave 14 of 1,014 translations
      // a lower log-probability than CTranslate2's).
      bool done =
          lastStep || grown.tokens.empty() ||
          sentenceSettled(grown, options.nbest, options.alpha,
                          maxLenOf(beam.sentence), options.powerPenalty);
      // Every sentence keeps k rows; a short beam (a vocabulary smaller than
      // 2k) fills up with copies that can never win.
      while (!done && int64_t(grown.tokens.size()) < k) {
        grown.tokens.push_back(grown.tokens.back());
        grown.logProbs.push_back(minusInf);
        if (aligns)
          grown.alignments.push_back(grown.alignments.back());
        parents.push_back(parents.back());
        last.push_back(last.back());
      }
      if (!done)
        placeOnParentRows(grown, parents, last, int64_t(i) * k, k);
      if (done) {
        // Out of steps: the live hypotheses end here, without eos.
        if (lastStep)
          endAsTheyAre(grown, grown.finished);
        std::stable_sort(grown.finished.begin(), grown.finished.end(),
                         [](const Hypothesis &a, const Hypothesis &b) {
                           return a.score > b.score;
                         });
        grown.finished.resize(
            std::min<size_t>(grown.finished.size(), options.nbest));
        deliver(grown.sentence, std::move(grown.finished));
        parents.resize(parents.size() - grown.tokens.size());
        last.resize(last.size() - grown.tokens.size());
        continue;
      }
      kept.push_back(int64_t(i));
      next.push_back(std::move(grown));
    }

    // The caches follow the surviving hypotheses; the encoder's K/V and the
    // source change only when a sentence left.
    if (!next.empty())
      LOOM_RETURN_IF_ERROR(state->keep(device, kept, parents));
    beams = std::move(next);
  }
  return results;
}

} // namespace loom::runtime
