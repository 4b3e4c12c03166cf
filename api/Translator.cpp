//===- Translator.cpp - A model directory that translates text ------------===//

#include "api/Translator.h"
#include "api/BatchPlan.h"
#include "api/LongSentences.h"

#include "abi/ModelAbi.h"
#include "runtime/Decoding.h"
#include "runtime/DecodingControls.h"
#include "runtime/TrainStep.h"
#include "runtime/Weights.h"
#include "text/Bleu.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>

namespace loom {

std::string vocabularyChecksum(const text::Tokenizer &tokenizer) {
  const std::string &bytes = tokenizer.modelBytes();
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes 32-bit lengths; a vocabulary is far smaller, but feed it in
  // parts anyway.
  for (size_t at = 0; at < bytes.size(); at += 1u << 30) {
    size_t part = std::min<size_t>(bytes.size() - at, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef *>(bytes.data() + at),
                uInt(part));
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return hex;
}

namespace {

/// The runtime's sampling of `o` (its seeds come per batch): on where the
/// top-k is other than 1, CTranslate2's convention.
runtime::BeamOptions::Sampling samplingOf(const TranslationOptions &o) {
  runtime::BeamOptions::Sampling sampling;
  sampling.on = o.samplingTopK != 1;
  sampling.topK = o.samplingTopK;
  sampling.topP = o.samplingTopP;
  sampling.temperature = o.samplingTemperature;
  return sampling;
}

/// Weights written by `loom train` record the checksum of the vocabulary
/// they were trained with; a vocabulary of the same size but other pieces
/// would translate into garbage without a word. Files without the record
/// (from PyTorch, or older) are taken on trust.
Status checkVocabulary(const text::Tokenizer &tokenizer,
                       const std::string &weights) {
  std::string recorded;
  Status read = readSafetensors(
      weights,
      [&](const SafeTensorFile &header) {
        auto it = header.metadata.find(kVocabularyChecksumKey);
        if (it != header.metadata.end())
          recorded = it->second;
        return Status::success();
      },
      nullptr);
  // The weights' own problems are reported when they are loaded.
  if (!read.ok() || recorded.empty())
    return Status::success();
  std::string actual = vocabularyChecksum(tokenizer);
  if (recorded != actual)
    return Status::failure("the vocabulary (CRC-32 " + actual +
                               ") is not the one '" + weights +
                               "' was trained with (CRC-32 " + recorded +
                               "): its pieces would map to other embeddings",
                           ErrorCode::InvalidArgument);
  return Status::success();
}

} // namespace

Status checkTranslatorFiles(const runtime::Program &program,
                            const text::Tokenizer &tokenizer,
                            const std::string &weights) {
  for (const char *entry : {abi::kEncode, abi::kDecodeStep})
    if (!program.hasEntry(entry))
      return Status::failure("the executable has no @" + std::string(entry) +
                                 "; it cannot translate",
                             ErrorCode::Unsupported);
  // The vocabulary must be the one the model was trained with, or at least
  // fit its embeddings.
  for (const char *table : {"src_embed.weight", "tgt_embed.weight"})
    if (const runtime::Program::StateTensor *embed = program.stateTensor(table))
      if (embed->shape.empty() || embed->shape[0] < tokenizer.vocabSize())
        return Status::failure(
            "the vocabulary has " + std::to_string(tokenizer.vocabSize()) +
                " pieces, more than the model's " + table + " rows (" +
                (embed->shape.empty() ? std::string("none")
                                      : std::to_string(embed->shape[0])) +
                ")",
            ErrorCode::InvalidArgument);
  return checkVocabulary(tokenizer, weights);
}

ErrorOr<std::unique_ptr<Translator>>
Translator::open(const std::string &dir, const TranslatorOptions &options) {
  std::string exePath = options.executable.empty()
                            ? dir + "/" + kTranslateExecutable
                            : options.executable;
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::load(exePath);
  if (!program)
    return program.status();
  ErrorOr<text::Tokenizer> tokenizer =
      text::Tokenizer::loadFile(dir + "/" + kVocabulary);
  if (!tokenizer)
    return tokenizer.status();
  ErrorOr<std::vector<std::shared_ptr<runtime::Device>>> devices =
      openDevicesFor(**program, options);
  if (!devices)
    return devices.status();
  return create(std::move(*program), std::move(*tokenizer),
                options.weights.empty() ? dir + "/" + kModelWeights
                                        : options.weights,
                std::move(*devices));
}

ErrorOr<std::shared_ptr<runtime::Device>>
Translator::openDeviceFor(const runtime::Program &program,
                          const TranslatorOptions &options) {
  // By default, the device the executable was compiled for.
  bool cpu = program.executable().target() == runtime::Executable::CPU;
  std::string kind =
      options.device.empty() ? (cpu ? "cpu" : "cuda") : options.device;
  ErrorOr<std::shared_ptr<runtime::Device>> device =
      runtime::openDevice(kind, options.threads);
  // A device this machine lacks is named; a bad thread count speaks for
  // itself.
  if (!device && device.code() != ErrorCode::InvalidArgument)
    return device.status().withContext("device '" + kind + "'");
  return device;
}

ErrorOr<std::vector<std::shared_ptr<runtime::Device>>>
Translator::openDevicesFor(const runtime::Program &program,
                           const TranslatorOptions &options) {
  if (options.workers < 1 || options.workers > 256)
    return Status::failure("workers must be between 1 and 256, got " +
                           std::to_string(options.workers));
  TranslatorOptions each = options;
  if (options.workers > 1) {
    bool cpu = options.device.empty()
                   ? program.executable().target() == runtime::Executable::CPU
                   : options.device == "cpu";
    if (!cpu)
      return Status::failure("several workers translate on the CPU only",
                             ErrorCode::Unsupported);
    int threads = options.threads > 0
                      ? options.threads
                      : int(std::max(1u, std::thread::hardware_concurrency()));
    each.threads = std::max(1, threads / options.workers);
  }
  std::vector<std::shared_ptr<runtime::Device>> devices;
  for (int w = 0; w < options.workers; ++w) {
    ErrorOr<std::shared_ptr<runtime::Device>> device =
        openDeviceFor(program, each);
    if (!device)
      return device.status();
    devices.push_back(std::move(*device));
  }
  return devices;
}

ErrorOr<std::unique_ptr<Translator>>
Translator::create(std::shared_ptr<const runtime::Program> program,
                   text::Tokenizer tokenizer, const std::string &weights,
                   int threads) {
  TranslatorOptions options;
  options.threads = threads;
  ErrorOr<std::shared_ptr<runtime::Device>> device =
      openDeviceFor(*program, options);
  if (!device)
    return device.status();
  return create(std::move(program), std::move(tokenizer), weights,
                std::move(*device));
}

ErrorOr<std::unique_ptr<Translator>>
Translator::create(std::shared_ptr<const runtime::Program> program,
                   text::Tokenizer tokenizer, const std::string &weights,
                   std::shared_ptr<runtime::Device> device) {
  std::vector<std::shared_ptr<runtime::Device>> devices;
  devices.push_back(std::move(device));
  return create(std::move(program), std::move(tokenizer), weights,
                std::move(devices));
}

ErrorOr<std::unique_ptr<Translator>>
Translator::create(std::shared_ptr<const runtime::Program> program,
                   text::Tokenizer tokenizer, const std::string &weights,
                   std::vector<std::shared_ptr<runtime::Device>> devices) {
  if (devices.empty())
    return Status::failure("a translator needs a device");
  LOOM_RETURN_IF_ERROR(checkTranslatorFiles(*program, tokenizer, weights));
  std::vector<std::unique_ptr<runtime::Session>> sessions;
  for (std::shared_ptr<runtime::Device> &device : devices) {
    if (!sessions.empty()) {
      // The first worker's weights, read, checked and packed once: N
      // workers hold one copy and stream one through the caches, where
      // the devices share the host's memory (else a copy, below).
      ErrorOr<std::unique_ptr<runtime::Session>> shared =
          runtime::Session::createSharing(*sessions[0], device);
      if (shared) {
        sessions.push_back(std::move(*shared));
        continue;
      }
      if (shared.code() != ErrorCode::Unsupported)
        return shared.status();
    }
    ErrorOr<std::unique_ptr<runtime::Session>> session =
        runtime::Session::create(program, std::move(device));
    if (!session)
      return session.status();
    if (sessions.empty()) {
      LOOM_RETURN_IF_ERROR(runtime::loadParametersFile(**session, weights));
    } else {
      // A device of its own memory: the first worker's parameters, read
      // and checked once, copied.
      for (const std::string &name : sessions[0]->parameterNames()) {
        ErrorOr<runtime::Tensor> value = sessions[0]->getState(name);
        if (!value)
          return value.status();
        LOOM_RETURN_IF_ERROR((*session)->setState(name, value->ref()));
      }
    }
    sessions.push_back(std::move(*session));
  }
  return std::unique_ptr<Translator>(
      new Translator(std::move(sessions), std::move(tokenizer)));
}

int64_t Translator::maxSourceTokens() const {
  return sessions[0]->program().executable().max_len();
}

void Translator::setProfiling(bool on) {
  for (const std::unique_ptr<runtime::Session> &session : sessions)
    session->setProfiling(on);
}

std::vector<runtime::KernelProfile> Translator::profile() const {
  std::vector<runtime::KernelProfile> merged;
  for (const std::unique_ptr<runtime::Session> &session : sessions)
    for (const runtime::KernelProfile &p : session->profile()) {
      auto same = std::find_if(merged.begin(), merged.end(),
                               [&](const runtime::KernelProfile &m) {
                                 return m.kernel == p.kernel;
                               });
      if (same == merged.end()) {
        merged.push_back(p);
      } else {
        same->calls += p.calls;
        same->seconds += p.seconds;
      }
    }
  std::sort(
      merged.begin(), merged.end(),
      [](const runtime::KernelProfile &a, const runtime::KernelProfile &b) {
        return a.seconds > b.seconds;
      });
  return merged;
}

Translator::Translator(std::vector<std::unique_ptr<runtime::Session>> sessions,
                       text::Tokenizer tokenizer)
    : sessions(std::move(sessions)), tokenizer(std::move(tokenizer)) {
  for (size_t i = 0; i < this->sessions.size(); ++i)
    sessionInUse.push_back(std::make_unique<std::mutex>());
}

Status Translator::checkOptions(const TranslationOptions &o) const {
  if (o.beam < 1 || o.nbest < 1 || o.nbest > o.beam || o.batch < 1)
    return Status::failure("beam and batch must be positive, nbest between 1 "
                           "and beam");
  if (o.minLength < 0 || o.maxLength < 0)
    return Status::failure("the minimum and maximum lengths must not be "
                           "negative, got " +
                           std::to_string(o.minLength) + " and " +
                           std::to_string(o.maxLength));
  if (o.minLength >= sessions[0]->program().executable().max_len())
    return Status::failure(
        "the minimum length " + std::to_string(o.minLength) +
        " leaves no room in the model's " +
        std::to_string(sessions[0]->program().executable().max_len()) +
        " positions");
  if (o.maxLength > 0 && o.minLength > o.maxLength)
    return Status::failure("the minimum length " + std::to_string(o.minLength) +
                           " is above the maximum " +
                           std::to_string(o.maxLength));
  runtime::DecodingControls controls;
  controls.repetitionPenalty = o.repetitionPenalty;
  controls.noRepeatNgram = o.noRepeatNgram;
  LOOM_RETURN_IF_ERROR(
      runtime::checkDecodingControls(controls, tokenizer.vocabSize()));
  for (const std::string &phrase : o.forbidden)
    if (text::splitWhitespace(phrase).empty())
      return Status::failure("a forbidden phrase is blank");
  LOOM_RETURN_IF_ERROR(runtime::checkSampling(samplingOf(o), o.beam, o.nbest));
  if (o.batchTokens < 0)
    return Status::failure("the batch's tokens must not be negative, got " +
                           std::to_string(o.batchTokens));
  // Non-finite values would reach a float-to-integer conversion below,
  // which is undefined (an infinite ratio used to cut every translation to
  // one token).
  if (!(o.maxLenRatio > 0) || !std::isfinite(o.maxLenRatio))
    return Status::failure("the length ratio must be a finite positive "
                           "number, got " +
                           std::to_string(o.maxLenRatio));
  if (!(o.alpha >= 0) || !std::isfinite(o.alpha))
    return Status::failure("alpha must be a finite number, not negative, "
                           "got " +
                           std::to_string(o.alpha));
  if (o.alignments) {
    ErrorOr<int64_t> layer =
        runtime::alignmentLayerIndex(*sessions[0], o.alignmentLayer);
    if (!layer)
      return layer.status();
  }
  const runtime::Executable &exe = sessions[0]->program().executable();
  if (o.beam > exe.max_batch())
    return Status::failure(
        "beam " + std::to_string(o.beam) + " needs more rows than the " +
        std::to_string(exe.max_batch()) + " the executable was compiled for");
  if (exe.max_len() < 2)
    return Status::failure("the executable takes sentences of at most " +
                               std::to_string(exe.max_len()) + " tokens",
                           ErrorCode::Unsupported);
  return Status::success();
}

int64_t Translator::maxBatchSentences(const TranslationOptions &o) const {
  // The executable was planned for at most max_batch rows; a larger batch
  // is decoded in parts rather than refused. A token budget replaces the
  // count of sentences.
  const runtime::Executable &exe = sessions[0]->program().executable();
  int64_t rows = exe.max_batch() / std::max<int64_t>(1, o.beam);
  return std::max<int64_t>(
      1, o.batchTokens > 0 ? rows : std::min<int64_t>(o.batch, rows));
}

ErrorOr<std::vector<std::vector<int32_t>>>
Translator::encodeParts(const std::string &sentence, int64_t number,
                        bool splitLong) const {
  if (!text::isValidUtf8(sentence))
    return Status::failure("sentence " + std::to_string(number) +
                           " is not valid UTF-8");
  std::vector<std::vector<int32_t>> parts;
  if (text::splitWhitespace(sentence).empty())
    return parts;
  ErrorOr<std::vector<int32_t>> ids = tokenizer.encode(sentence);
  if (!ids)
    return ids.status();
  // Each part is followed by eos.
  size_t limit = size_t(maxSourceTokens()) - 1;
  if (ids->size() > limit && !splitLong)
    return Status::failure(
        "sentence " + std::to_string(number) + " has " +
            std::to_string(ids->size() + 1) +
            " tokens (eos included), more than the " +
            std::to_string(limit + 1) +
            " the model takes: shorten it, or have long sentences translated "
            "in parts (--split-long)",
        ErrorCode::InvalidArgument);
  std::vector<size_t> cuts =
      splitPoints(*ids, limit, [&](int32_t id) { return tokenizer.piece(id); });
  cuts.push_back(ids->size());
  size_t start = 0;
  for (size_t cut : cuts) {
    parts.emplace_back(ids->begin() + start, ids->begin() + cut);
    parts.back().push_back(abi::kEosId);
    start = cut;
  }
  return parts;
}

ErrorOr<std::vector<int32_t>>
Translator::encodePrefix(const std::string &prefix, int64_t number) const {
  if (prefix.empty())
    return std::vector<int32_t>{};
  if (!text::isValidUtf8(prefix))
    return Status::failure("the target prefix of sentence " +
                           std::to_string(number) + " is not valid UTF-8");
  return tokenizer.encode(prefix);
}

ErrorOr<std::vector<std::vector<Translation>>> Translator::decodeBatch(
    int worker, const std::vector<const std::vector<int32_t> *> &sources,
    const std::vector<int64_t> &numbers, const TranslationOptions &o,
    const std::vector<std::vector<int32_t>> &targetPrefixes) {
  if (worker < 0 || worker >= workers())
    return Status::failure("no decoder " + std::to_string(worker) + " (of " +
                               std::to_string(workers()) + ")",
                           ErrorCode::Internal);
  if (sources.empty() || numbers.size() != sources.size() ||
      int64_t(sources.size()) > maxBatchSentences(o))
    return Status::failure("a batch of " + std::to_string(sources.size()) +
                               " sentences (" + std::to_string(numbers.size()) +
                               " numbers, at most " +
                               std::to_string(maxBatchSentences(o)) + ")",
                           ErrorCode::Internal);
  ErrorOr<runtime::JoiningSentences> in =
      decoderInputs({sources, numbers, targetPrefixes}, o);
  if (!in)
    return in.status();
  ErrorOr<runtime::BeamOptions> search = searchOptions(o);
  if (!search)
    return search.status();
  runtime::BeamOptions &beam = *search;
  beam.maxLens = std::move(in->maxLens);
  beam.sentenceNumbers = std::move(in->sentenceNumbers);
  beam.prefixes = std::move(in->prefixes);
  if (beam.sampling.on)
    beam.sampling.seeds = std::move(in->seeds);
  ErrorOr<std::vector<std::vector<runtime::Hypothesis>>> found = [&] {
    std::lock_guard<std::mutex> busy(*sessionInUse[worker]);
    return runtime::beamSearch(*sessions[worker], in->src.ref(), beam);
  }();
  if (!found)
    return found.status();
  std::vector<std::vector<Translation>> outputs(found->size());
  for (size_t i = 0; i < found->size(); ++i) {
    ErrorOr<std::vector<Translation>> nbest =
        translationsOf((*found)[i], *sources[i]);
    if (!nbest)
      return nbest.status();
    outputs[i] = std::move(*nbest);
  }
  return outputs;
}

ErrorOr<runtime::BeamOptions>
Translator::searchOptions(const TranslationOptions &o) const {
  runtime::BeamOptions beam;
  beam.beam = o.beam;
  beam.alpha = o.alpha;
  beam.powerPenalty = o.powerLengthPenalty;
  beam.nbest = o.nbest;
  beam.scores = o.scores;
  beam.minLen = o.minLength;
  beam.controls.repetitionPenalty = o.repetitionPenalty;
  beam.controls.noRepeatNgram = o.noRepeatNgram;
  for (const std::string &phrase : o.forbidden) {
    ErrorOr<std::vector<int32_t>> ids = tokenizer.encode(phrase);
    if (!ids)
      return ids.status();
    if (!ids->empty())
      beam.controls.forbidden.push_back(std::move(*ids));
  }
  beam.sampling = samplingOf(o);
  beam.alignments = o.alignments;
  beam.alignmentLayer = o.alignmentLayer;
  return beam;
}

ErrorOr<runtime::JoiningSentences>
Translator::decoderInputs(const JoiningSources &part,
                          const TranslationOptions &o) const {
  runtime::JoiningSentences in;
  if (part.numbers.size() != part.sources.size() ||
      (!part.prefixes.empty() && part.prefixes.size() != part.sources.size()))
    return Status::failure(
        "sentences to decode come with " + std::to_string(part.numbers.size()) +
            " numbers and " + std::to_string(part.prefixes.size()) +
            " target prefixes for " + std::to_string(part.sources.size()),
        ErrorCode::Internal);
  std::vector<std::vector<int64_t>> rows;
  for (size_t i = 0; i < part.sources.size(); ++i) {
    const std::vector<int32_t> &source = *part.sources[i];
    if (source.empty())
      return Status::failure("a blank sentence reached the decoder",
                             ErrorCode::Internal);
    rows.emplace_back(source.begin(), source.end());
    in.maxLens.push_back(sentenceMaxLen(
        source, part.prefixes.empty() ? 0 : part.prefixes[i].size(), o));
    in.seeds.push_back(samplingSeed(source, o.seed));
  }
  if (rows.empty())
    return in;
  ErrorOr<runtime::Tensor> ids = runtime::idsTensor(rows);
  if (!ids)
    return ids.status();
  in.src = std::move(*ids);
  // Messages name a sentence as the caller numbers it.
  in.sentenceNumbers = part.numbers;
  in.prefixes = part.prefixes;
  return in;
}

uint64_t Translator::samplingSeed(const std::vector<int32_t> &source,
                                  uint64_t seed) {
  // From the seed and the sentence's own tokens (FNV-1a, then a splitmix64
  // finish): not its place in the batch.
  uint64_t h = 1469598103934665603ull ^ seed;
  for (int32_t id : source) {
    h ^= uint64_t(uint32_t(id));
    h *= 1099511628211ull;
  }
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

int64_t Translator::sentenceMaxLen(const std::vector<int32_t> &source,
                                   size_t prefixTokens,
                                   const TranslationOptions &o) const {
  // Each sentence's own limit, so that its translation does not depend on
  // the sentences it is batched with. In double, clamped before the
  // conversion: a large ratio means "up to the executable's limit". A
  // prefix counts on top of what the ratio allows.
  double wanted =
      o.maxLenRatio * double(source.size()) + 1 + double(prefixTokens);
  int64_t most = std::max<int64_t>(
      2, int64_t(std::min(wanted, double(maxSourceTokens()))));
  // An absolute bound, and room for the minimum. Out of steps, a
  // hypothesis ends with the tokens it has (no eos): maxLens tokens.
  if (o.maxLength > 0)
    most = std::min(most, o.maxLength);
  return std::max(most, o.minLength);
}

ErrorOr<std::vector<Translation>>
Translator::translationsOf(const std::vector<runtime::Hypothesis> &nbest,
                           const std::vector<int32_t> &source) const {
  std::vector<Translation> out;
  for (const runtime::Hypothesis &h : nbest) {
    ErrorOr<std::string> text = tokenizer.decode(h.tokens);
    if (!text)
      return text.status();
    Translation t{std::move(*text), h.score, h.logProb,
                  int64_t(h.tokens.size())};
    // Source position n is the source's eos, which aligns nothing.
    int64_t sourcePieces = int64_t(source.size()) - 1;
    t.sourceTokens = sourcePieces;
    for (size_t j = 0; j < h.alignment.size(); ++j)
      if (h.alignment[j] < sourcePieces)
        t.alignment.push_back({h.alignment[j], int32_t(j)});
    out.push_back(std::move(t));
  }
  return out;
}

void Translator::forEachBatch(
    size_t count, const std::function<void(int worker, size_t batch)> &decode) {
  // Longest batches first: a worker that takes the last one then waits for
  // no long batch, and each session's memory grows to its largest size at
  // once instead of step by step.
  std::atomic<size_t> next{0};
  auto work = [&](int worker) {
    for (size_t taken = next++; taken < count; taken = next++)
      decode(worker, count - 1 - taken);
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < sessions.size() && w < count; ++w)
    helpers.emplace_back(work, int(w));
  work(0);
  for (std::thread &helper : helpers)
    helper.join();
}

ErrorOr<std::vector<std::vector<Translation>>>
Translator::translate(const std::vector<std::string> &sentences,
                      const TranslationOptions &o,
                      const std::function<void(const std::string &)> &warn) {
  return translate(sentences, {}, o, warn);
}

ErrorOr<std::vector<std::vector<Translation>>>
Translator::translate(const std::vector<std::string> &sentences,
                      const std::vector<std::string> &targetPrefixes,
                      const TranslationOptions &o,
                      const std::function<void(const std::string &)> &warn,
                      const std::function<Status()> &beforeBatch) {
  LOOM_RETURN_IF_ERROR(checkOptions(o));
  if (!targetPrefixes.empty() && targetPrefixes.size() != sentences.size())
    return Status::failure(std::to_string(targetPrefixes.size()) +
                           " target prefixes for " +
                           std::to_string(sentences.size()) +
                           " sentences: give one per sentence (an empty one "
                           "for none)");
  std::lock_guard<std::mutex> lock(calls);

  // Every sentence as ids + eos, in parts where it is too long and may be
  // split: each part is a unit of the batches.
  std::vector<std::vector<int32_t>> units, unitPrefixes;
  std::vector<size_t> unitSentence;
  std::vector<size_t> partCount(sentences.size(), 0);
  bool anyPrefix = false;
  for (size_t i = 0; i < sentences.size(); ++i) {
    ErrorOr<std::vector<std::vector<int32_t>>> parts =
        encodeParts(sentences[i], int64_t(i) + 1, o.splitLong);
    if (!parts)
      return parts.status();
    std::vector<int32_t> prefix;
    if (!targetPrefixes.empty()) {
      ErrorOr<std::vector<int32_t>> ids =
          encodePrefix(targetPrefixes[i], int64_t(i) + 1);
      if (!ids)
        return ids.status();
      prefix = std::move(*ids);
      anyPrefix = anyPrefix || !prefix.empty();
    }
    // The first part of a split sentence starts with its prefix.
    for (size_t p = 0; p < parts->size(); ++p)
      unitPrefixes.push_back(p == 0 ? prefix : std::vector<int32_t>{});
    partCount[i] = parts->size();
    if (parts->size() > 1 && warn)
      warn("line " + std::to_string(i + 1) + " is longer than the " +
           std::to_string(maxSourceTokens()) + " tokens the model takes: " +
           "translated in " + std::to_string(parts->size()) + " parts");
    for (std::vector<int32_t> &part : *parts) {
      units.push_back(std::move(part));
      unitSentence.push_back(i);
    }
  }

  // Similar lengths together; the output goes back to input order.
  std::vector<size_t> order(units.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return units[a].size() < units[b].size();
  });
  std::vector<int64_t> lengths;
  for (size_t u : order)
    lengths.push_back(int64_t(units[u].size()));
  std::vector<size_t> starts =
      planBatches(lengths, maxBatchSentences(o), o.batchTokens);
  // The batches, decoded by the workers side by side: each takes the next
  // batch not taken, and a batch's result does not depend on which worker
  // (same executable, same thread count) decoded it.
  std::vector<ErrorOr<std::vector<std::vector<Translation>>>> found(
      starts.size(), Status::failure("not decoded", ErrorCode::Internal));
  auto batchEnd = [&](size_t b) {
    return b + 1 < starts.size() ? starts[b + 1] : order.size();
  };
  auto decodeOne = [&](int worker, size_t b) {
    if (beforeBatch)
      if (Status go = beforeBatch(); !go.ok()) {
        found[b] = go;
        return;
      }
    std::vector<const std::vector<int32_t> *> part;
    std::vector<int64_t> numbers;
    std::vector<std::vector<int32_t>> prefixes;
    // Messages name a sentence by its place in `sentences`.
    for (size_t i = starts[b]; i < batchEnd(b); ++i) {
      part.push_back(&units[order[i]]);
      numbers.push_back(int64_t(unitSentence[order[i]]) + 1);
      if (anyPrefix)
        prefixes.push_back(unitPrefixes[order[i]]);
    }
    found[b] = decodeBatch(worker, part, numbers, o, prefixes);
  };
  forEachBatch(starts.size(), decodeOne);

  std::vector<std::vector<Translation>> unitOutputs(units.size());
  for (size_t b = 0; b < starts.size(); ++b) {
    if (!found[b])
      return found[b].status();
    for (size_t i = starts[b]; i < starts[b] + found[b]->size(); ++i)
      unitOutputs[order[i]] = std::move((*found[b])[i - starts[b]]);
  }
  // A sentence's parts, in order, joined rank by rank.
  std::vector<std::vector<Translation>> outputs =
      joinSentences(std::move(unitOutputs), partCount);
  // A blank sentence has n-best empty translations.
  for (size_t i = 0; i < sentences.size(); ++i)
    if (partCount[i] == 0)
      outputs[i].assign(o.nbest, Translation{});
  return outputs;
}

} // namespace loom
