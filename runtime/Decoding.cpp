//===- Decoding.cpp - Decoding with a compiled model ----------------------===//

#include "runtime/Decoding.h"
#include "runtime/Safetensors.h"

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

/// t becomes its rows `rows`, gathered into `spare` (allocated on first
/// use, else reshaped within its room) and swapped with it.
Status gatherRowsVia(Device &device, Tensor &t, Tensor &spare,
                     const std::vector<int64_t> &rows) {
  std::vector<int64_t> shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  if (!spare.data() || !spare.reuseAs(t.dtype(), shape)) {
    ErrorOr<Tensor> fresh =
        Tensor::onDevice(device, t.dtype(), shape, Fill::Unspecified);
    if (!fresh)
      return fresh.status();
    spare = std::move(*fresh);
  }
  LOOM_RETURN_IF_ERROR(device.gatherRows(t.ref(), rows, spare.ref()));
  std::swap(t, spare);
  return Status::success();
}

/// Positions a self-attention cache has room for when decoding may take
/// `steps`: the next power of two, at least 16.
int64_t roomPositions(int64_t steps) {
  int64_t room = 16;
  while (room < steps)
    room *= 2;
  return room;
}

/// Log-probabilities come from a log-softmax, so the best of a row is at
/// least -log(vocab) and none is NaN or +Inf; the best logit of a row is a
/// number too. Anything else means the model overflowed (finite parameters
/// too large for f32 arithmetic) or was miscompiled. Decoding stops rather
/// than rank such rows: NaN ranks below every number, and a row of NaN
/// would quietly decode as token 0. `entry` and `output` name where the
/// value came from.
Status nonFiniteScore(const char *entry, const char *output, double value,
                      int64_t sentence, int64_t step) {
  return Status::failure(
      std::string("@") + entry + " produced " + valueName(value) + " in '" +
          output + "' for sentence " + std::to_string(sentence) + " at step " +
          std::to_string(step) + "; the model overflows with these parameters",
      ErrorCode::InvalidArgument);
}

/// GNMT's length penalty, as Marian and OpenNMT apply it; or, `power`,
/// the length itself to the power alpha (CTranslate2's length_penalty: at
/// alpha 1 a score is the mean log-probability per token).
double lengthPenalty(int64_t length, double alpha, bool power) {
  if (power)
    return std::pow(double(std::max<int64_t>(1, length)), alpha);
  return std::pow((5.0 + double(length)) / 6.0, alpha);
}

/// One sentence's beam: its live hypotheses (rows of the batch, in order)
/// and those that ended.
struct Beam {
  int64_t sentence = 0;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<double> logProbs;
  std::vector<Hypothesis> finished;
};

struct Candidate {
  double logProb;
  int64_t parent; // index into the beam
  int32_t token;
};

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
  DType dtype = DType::F32;

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
  ErrorOr<Tensor> step(Session &session, const std::vector<int32_t> &tokens,
                       int64_t position);
  /// Whether step() runs @decode_step_logits, and the entry and output
  /// that follow from it.
  bool readsLogits = false;
  const char *entry() const {
    return readsLogits ? abi::kDecodeStepLogits : abi::kDecodeStep;
  }
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
    enum Kind { Src, Tokens, Position, Cross, Self } kind = Src;
    const Tensor *cross = nullptr; // a value of `cross`, which keep() swaps
    int64_t self = -1;             // index into `self`
  };
  std::vector<StepInput> stepInputs;
  // Kept from one step to the next, so that a step allocates nothing on
  // the host: a decode step of a small model is short enough for a dozen
  // mallocs, and the names copied and compared, to show.
  Tensor ids, at;
  std::vector<TensorRef> inputs;
  std::map<std::string, TensorRef> appendInto;

  /// Fills stepInputs and appendInto's names from the entry's inputs.
  Status planStep(Session &session);

  std::vector<int64_t> headShape; // [heads, head_dim]
};

ErrorOr<DecoderState> DecoderState::start(Session &session,
                                          const TensorRef &src, int64_t beam,
                                          int64_t steps) {
  Device &device = session.device();
  ErrorOr<Tensor> deviceSrc = toDevice(device, src);
  if (!deviceSrc)
    return deviceSrc.status();
  auto encoded = session.run(abi::kEncode, {deviceSrc->ref()});
  if (!encoded)
    return encoded.status();
  DecoderState state;
  state.sentences = src.shape[0];
  state.beam = beam;
  state.capacity = steps;
  state.src = std::move(*deviceSrc);
  for (NamedTensor &t : *encoded) {
    const std::vector<int64_t> &shape = t.tensor.shape();
    if (!abi::hasPrefix(t.name, abi::kCrossPrefix) || shape.size() != 4)
      return Status::failure("@encode returns '" + t.name +
                                 "', not a [batch, heads, len, dim] cross "
                                 "cache",
                             ErrorCode::Corrupt);
    state.headShape = {shape[1], shape[3]};
    state.dtype = t.tensor.dtype();
    SelfCache cache;
    cache.name =
        abi::kSelfPrefix +
        t.name.substr(std::char_traits<char>::length(abi::kCrossPrefix));
    // Read only at positions a step wrote. Unspecified, so that a block
    // kept from an earlier batch is not zeroed in full, and a new mapping's
    // pages of positions never reached cost nothing; room for a power of
    // two of positions, so that batches whose length limits differ a little
    // ask for the same size and reuse the blocks the last one freed (on the
    // CPU a new block is faulted in page by page as the cache grows).
    ErrorOr<Tensor> room = Tensor::onDevice(
        device, state.dtype,
        {roomPositions(steps), state.sentences * beam, shape[1], shape[3]},
        Fill::Unspecified);
    if (!room)
      return room.status();
    cache.room[0] = std::move(*room);
    state.self.push_back(std::move(cache));
    state.cross[t.name] = std::move(t.tensor);
  }
  return state;
}

Status DecoderState::keep(Device &device,
                          const std::vector<int64_t> &keptSentences,
                          const std::vector<int64_t> &rows) {
  int64_t oldRows = sentences * beam, newRows = int64_t(rows.size());
  int64_t rowElements = headShape[0] * headShape[1];
  int64_t esize = dtypeSize(dtype);
  // A row that keeps its hypothesis costs nothing. When no row is both read
  // by one that moves and moved itself, the rows that change move in place;
  // beam search puts a parent's first child on the parent's row, so that is
  // the rule and only a parent's later children move.
  bool inPlace = newRows == oldRows;
  if (inPlace) {
    std::vector<uint8_t> use(static_cast<size_t>(oldRows),
                             0); // 1 read, 2 written
    for (int64_t i = 0; i < newRows; ++i)
      if (rows[i] != i) {
        use[i] |= 2;
        use[rows[i]] |= 1;
      }
    inPlace =
        std::none_of(use.begin(), use.end(), [](uint8_t u) { return u == 3; });
  }
  if (inPlace) {
    std::vector<int64_t> from, to;
    for (int64_t t = 0; t < length; ++t)
      for (int64_t i = 0; i < newRows; ++i)
        if (rows[i] != i) {
          from.push_back(t * oldRows + rows[i]);
          to.push_back(t * oldRows + i);
        }
    if (!from.empty())
      for (SelfCache &c : self)
        LOOM_RETURN_IF_ERROR(
            device.moveRows(TensorRef{c.room[c.current].data(),
                                      dtype,
                                      {length * oldRows, rowElements}},
                            from, to));
  } else {
    for (SelfCache &c : self) {
      Tensor &other = c.room[1 - c.current];
      if (!other.data()) {
        ErrorOr<Tensor> room = Tensor::onDevice(
            device, dtype, c.room[c.current].shape(), Fill::Unspecified);
        if (!room)
          return room.status();
        other = std::move(*room);
      }
      for (int64_t t = 0; t < length; ++t) {
        TensorRef from{static_cast<char *>(c.room[c.current].data()) +
                           t * oldRows * rowElements * esize,
                       dtype,
                       {oldRows, rowElements}};
        TensorRef to{static_cast<char *>(other.data()) +
                         t * newRows * rowElements * esize,
                     dtype,
                     {newRows, rowElements}};
        LOOM_RETURN_IF_ERROR(device.gatherRows(from, rows, to));
      }
      c.current = 1 - c.current;
    }
  }
  if (int64_t(keptSentences.size()) != sentences) {
    for (auto &[name, tensor] : cross)
      LOOM_RETURN_IF_ERROR(
          gatherRowsVia(device, tensor, spareCross[name], keptSentences));
    LOOM_RETURN_IF_ERROR(gatherRowsVia(device, src, spareSrc, keptSentences));
    sentences = static_cast<int64_t>(keptSentences.size());
  }
  return Status::success();
}

Status DecoderState::planStep(Session &session) {
  for (const std::string &name : session.inputNames(entry())) {
    StepInput input;
    if (name == abi::kSrc) {
      input.kind = StepInput::Src;
    } else if (name == abi::kTokens) {
      input.kind = StepInput::Tokens;
    } else if (name == abi::kPosition) {
      input.kind = StepInput::Position;
    } else if (auto it = cross.find(name); it != cross.end()) {
      input.kind = StepInput::Cross;
      input.cross = &it->second;
    } else if (auto c = std::find_if(
                   self.begin(), self.end(),
                   [&](const SelfCache &c) { return c.name == name; });
               c != self.end()) {
      input.kind = StepInput::Self;
      input.self = c - self.begin();
      appendInto[name] = TensorRef{};
    } else {
      return Status::failure("@" + std::string(entry()) + " takes an input '" +
                                 name + "' that decoding does not know",
                             ErrorCode::Unsupported);
    }
    stepInputs.push_back(input);
  }
  return Status::success();
}

ErrorOr<Tensor> DecoderState::step(Session &session,
                                   const std::vector<int32_t> &tokens,
                                   int64_t position) {
  if (length >= capacity)
    return Status::failure("decoding ran past the " + std::to_string(capacity) +
                           " positions its caches have room for");
  if (stepInputs.empty())
    LOOM_RETURN_IF_ERROR(planStep(session));
  // Rows only get fewer: the first step's tensor holds every later one.
  if (!ids.data() || !ids.reuseAs(DType::I32, {sentences, beam})) {
    ErrorOr<Tensor> fresh = Tensor::host(DType::I32, {sentences, beam});
    if (!fresh)
      return fresh.status();
    ids = std::move(*fresh);
  }
  if (!at.data()) {
    ErrorOr<Tensor> fresh = Tensor::host(DType::I64, {});
    if (!fresh)
      return fresh.status();
    at = std::move(*fresh);
  }
  std::copy(tokens.begin(), tokens.end(), static_cast<int32_t *>(ids.data()));
  *static_cast<int64_t *>(at.data()) = position;
  std::vector<Tensor> staging; // host inputs copied to a device's memory
  // Assigned in place, so that each shape reuses its storage.
  auto refer = [](TensorRef &to, const Tensor &t) {
    to.data = const_cast<void *>(t.data());
    to.dtype = t.dtype();
    to.shape.assign(t.shape().begin(), t.shape().end());
  };
  inputs.resize(stepInputs.size());
  for (size_t i = 0; i < stepInputs.size(); ++i) {
    const StepInput &input = stepInputs[i];
    TensorRef &to = inputs[i];
    switch (input.kind) {
    case StepInput::Src:
      refer(to, src);
      break;
    case StepInput::Tokens:
    case StepInput::Position: {
      const Tensor &host = input.kind == StepInput::Tokens ? ids : at;
      if (session.device().sharesHostMemory()) {
        refer(to, host);
        break;
      }
      ErrorOr<TensorRef> ref =
          deviceInput(session.device(), host.ref(), staging);
      if (!ref)
        return ref.status();
      to = *ref;
      break;
    }
    case StepInput::Cross:
      refer(to, *input.cross);
      break;
    case StepInput::Self: {
      const SelfCache &c = self[input.self];
      const Tensor &room = c.room[c.current];
      to.data = const_cast<void *>(room.data());
      to.dtype = dtype;
      to.shape.assign({length, sentences, beam, headShape[0], headShape[1]});
      // The room from the cache's start: the step appends its position.
      TensorRef &into = appendInto.find(c.name)->second;
      into.data = to.data;
      into.dtype = dtype;
      into.shape.assign({room.numel()});
      break;
    }
    }
  }
  auto outputs = session.run(entry(), inputs, appendInto);
  if (!outputs)
    return outputs.status();
  ++length;
  std::optional<Tensor> rowScores;
  for (NamedTensor &r : *outputs)
    if (r.name == scores())
      rowScores = std::move(r.tensor);
  if (!rowScores || rowScores->shape().size() != 2)
    return Status::failure("@" + std::string(entry()) +
                               " returns no [rows, vocab] " + scores(),
                           ErrorCode::Corrupt);
  return std::move(*rowScores);
}

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
  std::vector<int64_t> placedParents(k);
  std::vector<int32_t> placedLast(k);
  for (int64_t j = 0; j < k; ++j) {
    placed.tokens[place[j]] = std::move(grown.tokens[j]);
    placed.logProbs[place[j]] = grown.logProbs[j];
    placedParents[place[j]] = parents[base + j];
    placedLast[place[j]] = last[base + j];
  }
  grown.tokens = std::move(placed.tokens);
  grown.logProbs = std::move(placed.logProbs);
  std::copy(placedParents.begin(), placedParents.end(), parents.begin() + base);
  std::copy(placedLast.begin(), placedLast.end(), last.begin() + base);
}

} // namespace

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
    auto scores = state->step(session, last, t);
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
  auto sentenceNumber = [&](int64_t sentence) {
    return options.sentenceNumbers.empty() ? sentence + 1
                                           : options.sentenceNumbers[sentence];
  };
  auto maxLenOf = [&](int64_t sentence) {
    return std::max<int64_t>(1, options.maxLens.empty()
                                    ? options.maxLen
                                    : options.maxLens[sentence]);
  };
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
  static const std::vector<int32_t> noPrefix;
  auto prefixOf = [&](int64_t sentence) -> const std::vector<int32_t> & {
    return options.prefixes.empty() ? noPrefix : options.prefixes[sentence];
  };
  for (int64_t s = 0; s < batch; ++s)
    if (int64_t(prefixOf(s).size()) >= maxLenOf(s))
      return Status::failure(
          "the target prefix of sentence " + std::to_string(sentenceNumber(s)) +
              " has " + std::to_string(prefixOf(s).size()) +
              " tokens, and at most " + std::to_string(maxLenOf(s)) +
              " tokens may be decoded: it leaves no room for the translation",
          ErrorCode::InvalidArgument);
  int64_t steps = 0;
  for (int64_t s = 0; s < batch; ++s)
    steps = std::max(steps, maxLenOf(s));
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
  // Beam 1 with one result and no length penalty compares only one row's
  // extensions with each other, and a hypothesis ending in eos with its
  // sibling of the same step, which it then beats for good (a log-probability
  // only falls, and alpha 0 divides by 1). The logits of one row rank as
  // its log-probabilities do, so without scores to return the row's
  // log-sum-exp is not needed: the sums below are of logits, and the search
  // takes the same decisions.
  const bool ranksRawLogits = !options.scores && k == 1 && options.nbest == 1 &&
                              options.alpha == 0 && state->readsLogits;

  std::vector<Beam> beams(batch);
  for (int64_t s = 0; s < batch; ++s) {
    beams[s].sentence = s;
    beams[s].tokens.assign(k, {});
    // The k rows start equal: only the first may expand at the first step.
    beams[s].logProbs.assign(k, minusInf);
    beams[s].logProbs[0] = 0;
  }
  std::vector<int32_t> last(batch * k, options.bos);

  for (int64_t t = 0; t < steps && !beams.empty(); ++t) {
    auto scores = state->step(session, last, t);
    if (!scores)
      return scores.status();
    // The 2k best extensions of a beam hold k that do not end the sentence,
    // and they are among the 2k best of each row: the device ranks each row,
    // and only 2k tokens a row come to the host, as log-probabilities (as
    // logits where ranksRawLogits: the search then needs only their order).
    int64_t vocab = scores->shape()[1];
    if (t == 0) {
      LOOM_RETURN_IF_ERROR(checkDecodingControls(options.controls, vocab));
      for (int64_t s = 0; s < int64_t(options.prefixes.size()); ++s)
        for (int32_t token : options.prefixes[s])
          if (token < 0 || token >= vocab)
            return Status::failure("the target prefix of sentence " +
                                       std::to_string(sentenceNumber(s)) +
                                       " holds token " + std::to_string(token) +
                                       ", outside the vocabulary of " +
                                       std::to_string(vocab),
                                   ErrorCode::InvalidArgument);
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
    if (!options.prefixes.empty()) {
      forcing.assign(beams.size(), false);
      forced.assign(beams.size() * k, std::numeric_limits<float>::quiet_NaN());
      std::vector<int64_t> cells, rows;
      for (size_t i = 0; i < beams.size(); ++i) {
        const std::vector<int32_t> &prefix = prefixOf(beams[i].sentence);
        if (t >= int64_t(prefix.size()))
          continue;
        forcing[i] = true;
        for (int64_t j = 0; j < k; ++j)
          if (beams[i].logProbs[j] != minusInf) {
            rows.push_back(int64_t(i) * k + j);
            cells.push_back(rows.back() * vocab + prefix[t]);
          }
      }
      if (!cells.empty()) {
        ErrorOr<std::vector<float>> values =
            device.readScores(scores->ref(), cells);
        if (!values)
          return values.status();
        std::vector<float> lse;
        if (state->readsLogits && !ranksRawLogits) {
          ErrorOr<std::vector<float>> sums = device.logSumExp(scores->ref());
          if (!sums)
            return sums.status();
          lse = std::move(*sums);
        }
        for (size_t c = 0; c < cells.size(); ++c)
          forced[rows[c]] = (*values)[c] - (lse.empty() ? 0.0f : lse[rows[c]]);
      }
    }
    // A search below its minimum length passes over eos for the next
    // candidate; a draw has no next candidate, so eos is banned from it.
    bool banEos = sampling.on && t + 1 <= options.minLen;
    if (options.controls.any() || banEos) {
      std::vector<Device::ScoreEdit> edits;
      for (size_t i = 0; i < beams.size(); ++i)
        for (int64_t j = 0; j < k; ++j) {
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
      bool lastStep = t + 1 >= maxLenOf(beam.sentence);
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
                                  sentenceNumber(beam.sentence), t + 1);
          candidates.push_back(
              {beam.logProbs[j] + value, j, prefixOf(beam.sentence)[t]});
          continue;
        }
        if (sampling.on) {
          // The row's values are best first; a banned one (-inf) and those
          // after it are out. Weights relative to the best, tempered.
          const float *values = top->values.data() + row * perRow;
          const int32_t *tokens = top->indices.data() + row * perRow;
          if (!std::isfinite(values[0]))
            return nonFiniteScore(state->entry(), state->scores(), values[0],
                                  sentenceNumber(beam.sentence), t + 1);
          std::vector<double> weights;
          double total = 0;
          for (int64_t c = 0; c < perRow; ++c) {
            if (std::isnan(values[c]))
              return nonFiniteScore(state->entry(), state->scores(), values[c],
                                    sentenceNumber(beam.sentence), t + 1);
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
                        value == -std::numeric_limits<float>::infinity();
          if (c == 0 ? !std::isfinite(value) && !banned : std::isnan(value))
            return nonFiniteScore(state->entry(), state->scores(), value,
                                  sentenceNumber(beam.sentence), t + 1);
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
      grown.finished = std::move(beam.finished);
      for (size_t c = 0; c < best && int64_t(grown.tokens.size()) < k; ++c) {
        const Candidate &cand = candidates[c];
        std::vector<int32_t> tokens = beam.tokens[cand.parent];
        if (cand.token == options.eos && t + 1 <= options.minLen)
          continue; // too early to end: the next candidate takes its place
        if (cand.token == options.eos) {
          // Every hypothesis that ends is kept: one ending after `k` others
          // may still score above them.
          grown.finished.push_back(
              {tokens, cand.logProb,
               cand.logProb / lengthPenalty(int64_t(tokens.size()) + 1,
                                            options.alpha,
                                            options.powerPenalty)});
          continue;
        }
        tokens.push_back(cand.token);
        grown.tokens.push_back(std::move(tokens));
        grown.logProbs.push_back(cand.logProb);
        parents.push_back(int64_t(i) * k + cand.parent);
        last.push_back(cand.token);
      }
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
        parents.push_back(parents.back());
        last.push_back(last.back());
      }
      if (!done)
        placeOnParentRows(grown, parents, last, int64_t(i) * k, k);
      if (done) {
        // Out of steps: the live hypotheses end here, without eos.
        if (lastStep)
          for (size_t j = 0; j < grown.tokens.size(); ++j)
            grown.finished.push_back(
                {grown.tokens[j], grown.logProbs[j],
                 grown.logProbs[j] /
                     lengthPenalty(int64_t(grown.tokens[j].size()),
                                   options.alpha, options.powerPenalty)});
        std::stable_sort(grown.finished.begin(), grown.finished.end(),
                         [](const Hypothesis &a, const Hypothesis &b) {
                           return a.score > b.score;
                         });
        grown.finished.resize(
            std::min<size_t>(grown.finished.size(), options.nbest));
        results[grown.sentence] = std::move(grown.finished);
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
  if (ranksRawLogits)
    for (std::vector<Hypothesis> &nbest : results)
      for (Hypothesis &h : nbest)
        h.logProb = h.score = 0;
  return results;
}

} // namespace loom::runtime
