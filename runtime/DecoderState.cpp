//===- DecoderState.cpp - What a decoder keeps between steps --------------===//

#include "runtime/DecoderState.h"
#include "runtime/Decoding.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <optional>

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

} // namespace

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

ErrorOr<DecoderState> DecoderState::encode(Session &session,
                                           const TensorRef &src, int64_t beam) {
  Device &device = session.device();
  ErrorOr<Tensor> deviceSrc = toDevice(device, src);
  if (!deviceSrc)
    return deviceSrc.status();
  auto encoded = session.run(abi::kEncode, {deviceSrc->ref()});
  if (!encoded)
    return encoded.status();
  DecoderState state;
  state.sentences = src.shape[0];
  state.starts.assign(size_t(state.sentences), 0);
  state.beam = beam;
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
    state.self.push_back(std::move(cache));
    state.cross[t.name] = std::move(t.tensor);
  }
  return state;
}

ErrorOr<DecoderState> DecoderState::start(Session &session,
                                          const TensorRef &src, int64_t beam,
                                          int64_t steps) {
  ErrorOr<DecoderState> state = encode(session, src, beam);
  if (!state)
    return state.status();
  state->capacity = steps;
  for (SelfCache &cache : state->self) {
    // Read only at positions a step wrote. Unspecified, so that a block
    // kept from an earlier batch is not zeroed in full, and a new mapping's
    // pages of positions never reached cost nothing; room for a power of
    // two of positions, so that batches whose length limits differ a little
    // ask for the same size and reuse the blocks the last one freed (on the
    // CPU a new block is faulted in page by page as the cache grows).
    ErrorOr<Tensor> room =
        Tensor::onDevice(session.device(), state->dtype,
                         {roomPositions(steps), state->sentences * beam,
                          state->headShape[0], state->headShape[1]},
                         Fill::Unspecified);
    if (!room)
      return room.status();
    cache.room[0] = std::move(*room);
  }
  return state;
}

Status DecoderState::keep(Device &device,
                          const std::vector<int64_t> &keptSentences,
                          const std::vector<int64_t> &rows) {
  int64_t oldRows = sentences * beam, newRows = int64_t(rows.size());
  int64_t rowElements = headShape[0] * headShape[1];
  int64_t esize = dtypeSize(dtype);
  // Positions that only sentences leaving now read (they joined before
  // every sentence kept) are dropped on the way.
  std::vector<int64_t> keptStarts;
  for (int64_t s : keptSentences)
    keptStarts.push_back(starts[size_t(s)]);
  int64_t drop = keptStarts.empty()
                     ? 0
                     : *std::min_element(keptStarts.begin(), keptStarts.end());
  // A row that keeps its hypothesis costs nothing. When no row is both read
  // by one that moves and moved itself, the rows that change move in place;
  // beam search puts a parent's first child on the parent's row, so that is
  // the rule and only a parent's later children move.
  bool inPlace = newRows == oldRows && drop == 0;
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
      // The other room may be of an earlier, smaller batch (join()).
      if (!other.data() || !other.reuseAs(dtype, c.room[c.current].shape())) {
        ErrorOr<Tensor> room = Tensor::onDevice(
            device, dtype, c.room[c.current].shape(), Fill::Unspecified);
        if (!room)
          return room.status();
        other = std::move(*room);
      }
      for (int64_t t = 0; t + drop < length; ++t) {
        TensorRef from{static_cast<char *>(c.room[c.current].data()) +
                           (t + drop) * oldRows * rowElements * esize,
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
  length -= drop;
  capacity -= drop;
  for (int64_t &start : keptStarts)
    start -= drop;
  starts = std::move(keptStarts);
  if (int64_t(keptSentences.size()) != sentences) {
    for (auto &[name, tensor] : cross)
      LOOM_RETURN_IF_ERROR(
          gatherRowsVia(device, tensor, spareCross[name], keptSentences));
    LOOM_RETURN_IF_ERROR(gatherRowsVia(device, src, spareSrc, keptSentences));
    sentences = static_cast<int64_t>(keptSentences.size());
  }
  return Status::success();
}

bool DecoderState::canJoin(const Session &session) {
  std::vector<std::string> names = session.inputNames(abi::kDecodeStep);
  return std::find(names.begin(), names.end(), abi::kStart) != names.end();
}

Status DecoderState::checkCanJoin(const Session &session) {
  if (canJoin(session))
    return Status::success();
  return Status::failure(
      "this executable's @decode_step takes no per-sentence start, so "
      "sentences cannot join a running batch: recompile it",
      ErrorCode::Unsupported);
}

Status DecoderState::join(Session &session, const TensorRef &newSrc,
                          int64_t steps) {
  if (newSrc.rank() != 2 || newSrc.dtype != DType::I32)
    return Status::failure("joining sentences take [batch, len] i32 ids");
  LOOM_RETURN_IF_ERROR(checkCanJoin(session));
  if (sentences == 0)
    return Status::failure("sentences join a state with none decoding",
                           ErrorCode::Internal);
  Device &device = session.device();
  // Only the joining sentences' sources and cross K/V: their self caches
  // are laid out below, beside the running ones'.
  ErrorOr<DecoderState> added = encode(session, newSrc, beam);
  if (!added)
    return added.status();
  int64_t joining = added->sentences;
  if (added->dtype != dtype || added->headShape != headShape)
    return Status::failure("@encode returned caches unlike the running ones",
                           ErrorCode::Corrupt);
  int64_t esize = dtypeSize(dtype);
  int64_t rowElements = headShape[0] * headShape[1];

  // Positions before every sentence's start are read by none.
  int64_t drop = *std::min_element(starts.begin(), starts.end());
  int64_t newLength = length - drop;
  int64_t newCapacity = std::max(capacity - drop, newLength + steps);
  int64_t oldRows = sentences * beam, newRows = (sentences + joining) * beam;
  int64_t rowBytes = rowElements * esize;
  int64_t zeroBytes = joining * beam * rowBytes;
  if (zeros.bytes() < zeroBytes) {
    ErrorOr<Tensor> fresh =
        Tensor::onDevice(device, dtype, {zeroBytes / esize}, Fill::Zeros);
    if (!fresh)
      return fresh.status();
    zeros = std::move(*fresh);
  }
  for (SelfCache &c : self) {
    Tensor &into = c.room[1 - c.current];
    std::vector<int64_t> shape = {roomPositions(newCapacity), newRows,
                                  headShape[0], headShape[1]};
    if (!into.data() || !into.reuseAs(dtype, shape)) {
      into = Tensor(); // its memory back before the new room is taken
      ErrorOr<Tensor> room =
          Tensor::onDevice(device, dtype, shape, Fill::Unspecified);
      if (!room)
        return room.status();
      into = std::move(*room);
    }
    const char *from = static_cast<const char *>(c.room[c.current].data());
    char *to = static_cast<char *>(into.data());
    for (int64_t t = 0; t < newLength; ++t) {
      char *slot = to + t * newRows * rowBytes;
      LOOM_RETURN_IF_ERROR(device.copy(
          slot, from + (t + drop) * oldRows * rowBytes,
          size_t(oldRows * rowBytes), CopyDirection::DeviceToDevice));
      LOOM_RETURN_IF_ERROR(device.copy(slot + oldRows * rowBytes, zeros.data(),
                                       size_t(zeroBytes),
                                       CopyDirection::DeviceToDevice));
    }
    c.current = 1 - c.current;
  }

  // Sources and cross-attention K/V: the running sentences', then the
  // joining ones', each padded to the longest source among them (the
  // padding of sentences that left goes: every later step would read it).
  ErrorOr<Tensor> oldSrc = toHost(src);
  if (!oldSrc)
    return oldSrc.status();
  int64_t oldLen = src.shape()[1], addLen = newSrc.shape[1];
  const auto *oldIds = static_cast<const int32_t *>(oldSrc->data());
  int64_t liveLen = 1;
  for (int64_t n = 0; n < sentences; ++n)
    for (int64_t j = oldLen; j > liveLen; --j)
      if (oldIds[n * oldLen + j - 1] != 0) {
        liveLen = j;
        break;
      }
  int64_t srcLen = std::max(liveLen, addLen);
  ErrorOr<Tensor> ids2 =
      Tensor::host(DType::I32, {sentences + joining, srcLen});
  if (!ids2)
    return ids2.status();
  auto *joined = static_cast<int32_t *>(ids2->data());
  const auto *addIds = static_cast<const int32_t *>(newSrc.data);
  for (int64_t n = 0; n < sentences; ++n)
    std::copy(oldIds + n * oldLen, oldIds + n * oldLen + liveLen,
              joined + n * srcLen);
  for (int64_t n = 0; n < joining; ++n)
    std::copy(addIds + n * addLen, addIds + (n + 1) * addLen,
              joined + (sentences + n) * srcLen);
  ErrorOr<Tensor> deviceSrc = toDevice(device, ids2->ref());
  if (!deviceSrc)
    return deviceSrc.status();
  src = std::move(*deviceSrc);
  for (auto &[name, tensor] : cross) {
    const Tensor &more = added->cross.at(name);
    int64_t heads = headShape[0], dim = headShape[1];
    ErrorOr<Tensor> wide = Tensor::onDevice(
        device, dtype, {sentences + joining, heads, srcLen, dim},
        srcLen == liveLen && srcLen == addLen ? Fill::Unspecified
                                              : Fill::Zeros);
    if (!wide)
      return wide.status();
    // The first `used` of rows of `len` positions into rows of srcLen:
    // one copy where they are all as long, else one per sentence and head.
    auto place = [&](const Tensor &part, int64_t firstSentence, int64_t count,
                     int64_t len, int64_t used) -> Status {
      const char *from = static_cast<const char *>(part.data());
      char *to = static_cast<char *>(wide->data()) +
                 firstSentence * heads * srcLen * dim * esize;
      if (len == srcLen && used == len)
        return device.copy(to, from, size_t(count * heads * len * dim * esize),
                           CopyDirection::DeviceToDevice);
      for (int64_t r = 0; r < count * heads; ++r)
        LOOM_RETURN_IF_ERROR(device.copy(
            to + r * srcLen * dim * esize, from + r * len * dim * esize,
            size_t(used * dim * esize), CopyDirection::DeviceToDevice));
      return Status::success();
    };
    LOOM_RETURN_IF_ERROR(place(tensor, 0, sentences, oldLen, liveLen));
    LOOM_RETURN_IF_ERROR(place(more, sentences, joining, addLen, addLen));
    tensor = std::move(*wide);
  }
  for (int64_t &s : starts)
    s -= drop;
  starts.insert(starts.end(), size_t(joining), newLength);
  sentences += joining;
  length = newLength;
  capacity = newCapacity;
  return Status::success();
}

ErrorOr<std::vector<float>> logProbsAt(Device &device, const Tensor &scores,
                                       const std::vector<int64_t> &cells,
                                       const std::vector<int64_t> &rows,
                                       bool logits) {
  ErrorOr<std::vector<float>> values = device.readScores(scores.ref(), cells);
  if (!values || !logits)
    return values;
  ErrorOr<std::vector<float>> lse = device.logSumExp(scores.ref());
  if (!lse)
    return lse.status();
  for (size_t c = 0; c < cells.size(); ++c)
    (*values)[c] -= (*lse)[rows[c]];
  return values;
}

Status checkInVocabulary(const std::vector<int32_t> &tokens, int64_t vocab,
                         const std::string &what) {
  for (int32_t token : tokens)
    if (token < 0 || token >= vocab)
      return Status::failure(what + " holds token " + std::to_string(token) +
                                 ", outside the vocabulary of " +
                                 std::to_string(vocab),
                             ErrorCode::InvalidArgument);
  return Status::success();
}

Status DecoderState::askAlignments(const Session &session, int64_t layer) {
  ErrorOr<int64_t> index = alignmentLayerIndex(session, layer);
  if (!index)
    return index.status();
  alignmentLayer = *index;
  readsLogits = true;
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
    } else if (name == abi::kStart) {
      input.kind = StepInput::Start;
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
                                   const std::vector<int32_t> &tokens) {
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
  if (!startAt.data() || !startAt.reuseAs(DType::I64, {sentences})) {
    ErrorOr<Tensor> fresh = Tensor::host(DType::I64, {sentences});
    if (!fresh)
      return fresh.status();
    startAt = std::move(*fresh);
  }
  std::copy(tokens.begin(), tokens.end(), static_cast<int32_t *>(ids.data()));
  *static_cast<int64_t *>(at.data()) = length;
  std::copy(starts.begin(), starts.end(),
            static_cast<int64_t *>(startAt.data()));
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
    case StepInput::Position:
    case StepInput::Start: {
      const Tensor &host = input.kind == StepInput::Tokens     ? ids
                           : input.kind == StepInput::Position ? at
                                                               : startAt;
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
  std::string alignmentName =
      alignmentLayer >= 0
          ? abi::cacheName(abi::kAlignmentPrefix, alignmentLayer)
          : "";
  for (NamedTensor &r : *outputs) {
    if (r.name == scores())
      rowScores = std::move(r.tensor);
    else if (!alignmentName.empty() && r.name == alignmentName)
      alignment = std::move(r.tensor);
  }
  if (!alignmentName.empty() &&
      (!alignment.data() || alignment.shape().size() != 3 ||
       alignment.shape()[0] * alignment.shape()[1] != sentences * beam))
    return Status::failure("@" + std::string(entry()) + " returns no [" +
                               std::to_string(sentences) + ", " +
                               std::to_string(beam) + ", src_len] " +
                               alignmentName,
                           ErrorCode::Corrupt);
  if (!rowScores || rowScores->shape().size() != 2)
    return Status::failure("@" + std::string(entry()) +
                               " returns no [rows, vocab] " + scores(),
                           ErrorCode::Corrupt);
  return std::move(*rowScores);
}

} // namespace loom::runtime
