//===- Decoding.cpp - Decoding with a compiled model ----------------------===//

#include "runtime/cpu/Decoding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

namespace loom::cpu {

namespace {

/// Rows `rows` of `t` along its first dim, in that order.
Tensor gatherRows(const TensorRef &t, const std::vector<int64_t> &rows) {
  std::vector<int64_t> shape = t.shape;
  int64_t rowBytes = shape[0] ? t.bytes() / shape[0] : 0;
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out(t.dtype, shape);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<char *>(out.data()) + i * rowBytes,
                static_cast<const char *>(t.data) + rows[i] * rowBytes,
                rowBytes);
  return out;
}

/// GNMT's length penalty, as Marian and OpenNMT apply it.
double lengthPenalty(int64_t length, double alpha) {
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

/// What @decode_step reads besides the tokens and the position, one row per
/// hypothesis: the source ids, the encoder's cross-attention K/V and the
/// self-attention caches.
struct DecoderState {
  Tensor src;
  std::map<std::string, Tensor> caches; // "cross_*" and "self_*"

  /// Runs @encode on `src`; each sentence's row is repeated `copies` times,
  /// and the self-attention caches start empty.
  static ErrorOr<DecoderState> start(CpuModel &model, const TensorRef &src,
                                     int64_t copies);
  /// One @decode_step: keeps the new self-attention caches (one row per
  /// row of `tokens`) and returns the log-probabilities.
  ErrorOr<Tensor> step(CpuModel &model, const std::vector<int32_t> &tokens,
                       int64_t position);
};

ErrorOr<DecoderState> DecoderState::start(CpuModel &model, const TensorRef &src,
                                          int64_t copies) {
  using Result = ErrorOr<DecoderState>;
  auto encoded = model.run("encode", {src});
  if (!encoded)
    return Result::failure(encoded.error());
  std::vector<int64_t> rows;
  for (int64_t s = 0; s < src.shape[0]; ++s)
    for (int64_t j = 0; j < copies; ++j)
      rows.push_back(s);
  DecoderState state;
  state.src = gatherRows(src, rows);
  for (NamedTensor &t : *encoded) {
    if (t.name.rfind("cross_", 0) != 0 || t.tensor.shape().size() != 4)
      return Result::failure("@encode returns '" + t.name +
                             "', not a [batch, heads, len, dim] cross cache");
    // Empty self-attention caches, shaped like the cross ones.
    std::vector<int64_t> shape = t.tensor.shape();
    shape[0] = static_cast<int64_t>(rows.size());
    shape[2] = 0;
    state.caches["self_" + t.name.substr(6)] = Tensor(t.tensor.dtype(), shape);
    state.caches[t.name] =
        copies == 1 ? std::move(t.tensor) : gatherRows(t.tensor.ref(), rows);
  }
  return state;
}

ErrorOr<Tensor> DecoderState::step(CpuModel &model,
                                   const std::vector<int32_t> &tokens,
                                   int64_t position) {
  Tensor ids(runtime::Buffer::I32, {static_cast<int64_t>(tokens.size()), 1});
  std::copy(tokens.begin(), tokens.end(), static_cast<int32_t *>(ids.data()));
  Tensor at(runtime::Buffer::I64, {});
  *static_cast<int64_t *>(at.data()) = position;
  std::vector<TensorRef> inputs;
  for (const std::string &name : model.inputNames("decode_step")) {
    if (name == "src")
      inputs.push_back(src.ref());
    else if (name == "tokens")
      inputs.push_back(ids.ref());
    else if (name == "position")
      inputs.push_back(at.ref());
    else if (auto it = caches.find(name); it != caches.end())
      inputs.push_back(it->second.ref());
    else
      return ErrorOr<Tensor>::failure("@decode_step takes an input '" + name +
                                      "' that decoding does not know");
  }
  auto outputs = model.run("decode_step", inputs);
  if (!outputs)
    return ErrorOr<Tensor>::failure(outputs.error());
  std::optional<Tensor> logProbs;
  for (NamedTensor &r : *outputs) {
    if (r.name == "log_probs")
      logProbs = std::move(r.tensor);
    else
      caches[r.name] = std::move(r.tensor);
  }
  if (!logProbs)
    return ErrorOr<Tensor>::failure("@decode_step returns no log_probs");
  return std::move(*logProbs);
}

} // namespace

ErrorOr<std::vector<std::vector<int32_t>>>
greedyDecode(CpuModel &model, const TensorRef &src,
             const GreedyOptions &options) {
  using Result = ErrorOr<std::vector<std::vector<int32_t>>>;
  if (src.rank() != 2 || src.dtype != runtime::Buffer::I32)
    return Result::failure("greedy decoding takes [batch, len] i32 ids");
  int64_t batch = src.shape[0];
  auto state = DecoderState::start(model, src, 1);
  if (!state)
    return Result::failure(state.error());
  std::vector<int32_t> last(batch, options.bos);
  std::vector<std::vector<int32_t>> out(batch);
  std::vector<bool> done(batch, false);
  for (int64_t t = 0; t < options.maxLen; ++t) {
    auto logProbs = state->step(model, last, t);
    if (!logProbs)
      return Result::failure(logProbs.error());
    int64_t vocab = logProbs->shape().back();
    bool all = true;
    for (int64_t b = 0; b < batch; ++b) {
      const float *row = logProbs->f32() + b * vocab;
      last[b] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
      if (!done[b]) {
        if (last[b] == options.eos)
          done[b] = true;
        else
          out[b].push_back(last[b]);
      }
      all = all && done[b];
    }
    if (all && options.stopAtEos)
      break;
  }
  return out;
}

ErrorOr<std::vector<std::vector<Hypothesis>>>
beamSearch(CpuModel &model, const TensorRef &src, const BeamOptions &options) {
  using Result = ErrorOr<std::vector<std::vector<Hypothesis>>>;
  if (src.rank() != 2 || src.dtype != runtime::Buffer::I32)
    return Result::failure("beam search takes [batch, len] i32 ids");
  if (options.beam < 1 || options.nbest < 1 || options.nbest > options.beam ||
      options.maxLen < 1)
    return Result::failure("beam search needs beam >= 1, 1 <= nbest <= "
                           "beam and maxLen >= 1");
  const int64_t batch = src.shape[0], k = options.beam;
  if (!options.maxLens.empty() && int64_t(options.maxLens.size()) != batch)
    return Result::failure(
        "beam search got " + std::to_string(options.maxLens.size()) +
        " maximum lengths for " + std::to_string(batch) + " sentences");
  auto maxLenOf = [&](int64_t sentence) {
    return std::max<int64_t>(1, options.maxLens.empty()
                                    ? options.maxLen
                                    : options.maxLens[sentence]);
  };
  int64_t steps = 0;
  for (int64_t s = 0; s < batch; ++s)
    steps = std::max(steps, maxLenOf(s));
  const double minusInf = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<Hypothesis>> results(batch);
  if (batch == 0)
    return results;

  // Every sentence's rows repeat its source and encoder K/V `k` times.
  auto state = DecoderState::start(model, src, k);
  if (!state)
    return Result::failure(state.error());

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
    auto logProbs = state->step(model, last, t);
    if (!logProbs)
      return Result::failure(logProbs.error());
    int64_t vocab = logProbs->shape().back();

    std::vector<Beam> next;
    std::vector<int64_t> parents; // rows of this step each next row follows
    std::vector<int64_t> kept;    // sentences (indices into `beams`) kept
    last.clear();
    for (size_t i = 0; i < beams.size(); ++i) {
      Beam &beam = beams[i];
      bool lastStep = t + 1 >= maxLenOf(beam.sentence);
      // The 2k best extensions hold k that do not end the sentence.
      std::vector<Candidate> candidates;
      for (int64_t j = 0; j < k; ++j) {
        if (beam.logProbs[j] == minusInf)
          continue;
        const float *row = logProbs->f32() + (i * k + j) * vocab;
        for (int64_t v = 0; v < vocab; ++v)
          candidates.push_back(
              {beam.logProbs[j] + row[v], j, static_cast<int32_t>(v)});
      }
      size_t top = std::min<size_t>(candidates.size(), 2 * k);
      std::partial_sort(candidates.begin(), candidates.begin() + top,
                        candidates.end(),
                        [](const Candidate &a, const Candidate &b) {
                          return a.logProb > b.logProb ||
                                 (a.logProb == b.logProb && a.token < b.token);
                        });
      Beam grown;
      grown.sentence = beam.sentence;
      grown.finished = std::move(beam.finished);
      for (size_t c = 0; c < top && int64_t(grown.tokens.size()) < k; ++c) {
        const Candidate &cand = candidates[c];
        std::vector<int32_t> tokens = beam.tokens[cand.parent];
        if (cand.token == options.eos) {
          if (int64_t(grown.finished.size()) < k)
            grown.finished.push_back(
                {tokens, cand.logProb,
                 cand.logProb /
                     lengthPenalty(int64_t(tokens.size()) + 1, options.alpha)});
          continue;
        }
        tokens.push_back(cand.token);
        grown.tokens.push_back(std::move(tokens));
        grown.logProbs.push_back(cand.logProb);
        parents.push_back(int64_t(i) * k + cand.parent);
        last.push_back(cand.token);
      }
      bool done = int64_t(grown.finished.size()) >= k || lastStep ||
                  grown.tokens.empty();
      // Every sentence keeps k rows; a short beam (a vocabulary smaller than
      // 2k) fills up with copies that can never win.
      while (!done && int64_t(grown.tokens.size()) < k) {
        grown.tokens.push_back(grown.tokens.back());
        grown.logProbs.push_back(minusInf);
        parents.push_back(parents.back());
        last.push_back(last.back());
      }
      if (done) {
        // Out of steps: the live hypotheses end here, without eos.
        if (lastStep)
          for (size_t j = 0; j < grown.tokens.size(); ++j)
            grown.finished.push_back(
                {grown.tokens[j], grown.logProbs[j],
                 grown.logProbs[j] /
                     lengthPenalty(int64_t(grown.tokens[j].size()),
                                   options.alpha)});
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
    bool shrank = next.size() != beams.size();
    std::vector<int64_t> sentenceRows;
    for (int64_t i : kept)
      for (int64_t j = 0; j < k; ++j)
        sentenceRows.push_back(i * k + j);
    for (auto &[name, tensor] : state->caches) {
      if (name.rfind("self_", 0) == 0)
        tensor = gatherRows(tensor.ref(), parents);
      else if (shrank)
        tensor = gatherRows(tensor.ref(), sentenceRows);
    }
    if (shrank)
      state->src = gatherRows(state->src.ref(), sentenceRows);
    beams = std::move(next);
  }
  return results;
}

} // namespace loom::cpu
