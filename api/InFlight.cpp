//===- InFlight.cpp - Translator::decodeInFlight --------------------------===//
//
// In-flight batching for a server: one beam search runs on a worker while
// sentences join it between steps (runtime::BeamOptions::join) and leave as
// they end (runtime::BeamOptions::finished), so the batch stays full while
// requests come and go instead of shrinking to its longest sentence while
// new requests wait. Each sentence takes the limits, seed and prefix it
// would have in decodeBatch, and decodes as it would alone.
//
//===----------------------------------------------------------------------===//

#include "api/Translator.h"

#include "runtime/DecoderState.h"
#include "runtime/Decoding.h"

namespace loom {

bool Translator::decodesInFlight() const {
  return runtime::DecoderState::canJoin(*sessions[0]);
}

Status Translator::decodeInFlight(
    int worker, const JoiningSources &first, const TranslationOptions &o,
    const std::function<JoiningSources(int64_t room)> &more,
    const std::function<void(size_t, std::vector<Translation>)> &done) {
  if (worker < 0 || worker >= workers())
    return Status::failure("no decoder " + std::to_string(worker) + " (of " +
                               std::to_string(workers()) + ")",
                           ErrorCode::Internal);
  // Every sentence so far, by its index in done().
  std::vector<const std::vector<int32_t> *> sources;
  // The runtime's view of `part`, whose sources done() will need.
  auto prepare = [&](const JoiningSources &part) {
    ErrorOr<runtime::JoiningSentences> in = decoderInputs(part, o);
    if (in)
      sources.insert(sources.end(), part.sources.begin(), part.sources.end());
    return in;
  };

  ErrorOr<runtime::BeamOptions> search = searchOptions(o);
  if (!search)
    return search.status();
  runtime::BeamOptions &beam = *search;
  ErrorOr<runtime::JoiningSentences> start = prepare(first);
  if (!start)
    return start.status();
  if (!start->src.data())
    return Status::failure("an in-flight batch starts with no sentence",
                           ErrorCode::Internal);
  beam.maxLens = start->maxLens;
  beam.sentenceNumbers = start->sentenceNumbers;
  beam.prefixes = start->prefixes;
  if (beam.sampling.on)
    beam.sampling.seeds = start->seeds;
  beam.maxSentences = maxBatchSentences(o);
  // A translation that cannot be made text stops the search at its next
  // step, with the message.
  Status failed = Status::success();
  beam.join = [&](int64_t room) -> ErrorOr<runtime::JoiningSentences> {
    if (!failed.ok())
      return failed;
    return prepare(more(room));
  };
  beam.finished = [&](int64_t sentence,
                      std::vector<runtime::Hypothesis> nbest) {
    if (!failed.ok())
      return;
    ErrorOr<std::vector<Translation>> translations =
        translationsOf(nbest, *sources[size_t(sentence)]);
    if (!translations) {
      failed = translations.status();
      return;
    }
    done(size_t(sentence), std::move(*translations));
  };
  std::lock_guard<std::mutex> busy(*sessionInUse[worker]);
  auto found = runtime::beamSearch(*sessions[worker], start->src.ref(), beam);
  if (!found)
    return found.status();
  return failed;
}

} // namespace loom
