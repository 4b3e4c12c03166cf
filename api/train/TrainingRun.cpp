//===- TrainingRun.cpp - A run's directory, data and resumption -----------===//

#include "api/train/TrainingRun.h"

#include "api/Translator.h"
#include "api/train/Curves.h"
#include "api/train/Observers.h"
#include "runtime/AtomicFile.h"
#include "runtime/Executable.h"
#include "text/Corpus.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace loom::train {

namespace {

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

std::string hex64(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)value);
  return text;
}

/// The training data's ids as bytes, to checksum: a resumed run must see
/// the same data.
std::string idsBytes(const TrainData &data) {
  std::string bytes;
  auto append = [&](const std::vector<int64_t> &ids) {
    for (int64_t id : ids)
      bytes.append(reinterpret_cast<const char *>(&id), sizeof id);
    int64_t end = -1;
    bytes.append(reinterpret_cast<const char *>(&end), sizeof end);
  };
  for (size_t i = 0; i < data.sources.size(); ++i) {
    append(data.sources[i]);
    append(data.targets[i]);
  }
  return bytes;
}

/// A pair as the model takes it: source ids + eos, target bos + ids + eos.
void addModelPair(const text::CorpusPair &pair,
                  std::vector<std::vector<int64_t>> &sources,
                  std::vector<std::vector<int64_t>> &targets) {
  std::vector<int64_t> &src =
      sources.emplace_back(pair.src.begin(), pair.src.end());
  src.push_back(text::Tokenizer::kEos);
  std::vector<int64_t> &tgt = targets.emplace_back(1, text::Tokenizer::kBos);
  tgt.insert(tgt.end(), pair.tgt.begin(), pair.tgt.end());
  tgt.push_back(text::Tokenizer::kEos);
}

ErrorOr<text::Corpus> readPairs(const std::vector<std::string> &files,
                                const text::Tokenizer &tokenizer,
                                int64_t maxLen, bool keepText,
                                const char *what) {
  if (files.size() != 2)
    return invalid(std::string("the ") + what +
                   " corpus is two files, SRC and TGT");
  auto encode = [&](const std::string &line) { return tokenizer.encode(line); };
  text::CorpusOptions options;
  options.maxLen = maxLen - 2; // room for bos and eos
  options.keepText = keepText;
  ErrorOr<text::Corpus> corpus =
      text::readCorpus(files[0], files[1], encode, encode, options);
  if (!corpus)
    return corpus;
  if (corpus->pairs.empty())
    return invalid(std::string("the ") + what +
                   " corpus has no usable pairs (" +
                   text::describe(corpus->stats, options.maxLen) + ")");
  std::printf("%s: %s\n", what,
              text::describe(corpus->stats, options.maxLen).c_str());
  return corpus;
}

/// `key` of `metadata` read as T; false when it is missing or unreadable.
template <typename T>
bool readSetting(const Metadata &metadata, const char *key, T &value,
                 std::string &text) {
  auto it = metadata.find(key);
  if (it == metadata.end())
    return false;
  text = it->second;
  std::istringstream in(text);
  return bool(in >> value);
}

} // namespace

Status takeRecordedSettings(const std::string &path, const Metadata &metadata,
                            const std::set<std::string> &given,
                            RunSettings &settings) {
  auto take = [&](const char *flag, const char *key, auto &value,
                  bool mayChange) -> Status {
    std::remove_reference_t<decltype(value)> saved{};
    std::string text;
    if (!metadata.count(key))
      return invalid("'" + path + "' does not record " + key);
    if (!readSetting(metadata, key, saved, text))
      return invalid("'" + path + "' records an unreadable " + key + " '" +
                     text + "'");
    if (!given.count(flag)) {
      value = saved;
    } else if (value != saved) {
      if (!mayChange)
        return invalid("'" + path + "' was trained with " + flag + " " + text +
                       "; the same run needs the same value");
      std::printf("note: %s changes from %s\n", flag, text.c_str());
    }
    return Status::success();
  };
  LOOM_RETURN_IF_ERROR(take("--seed", "seed", settings.seed, false));
  LOOM_RETURN_IF_ERROR(
      take("--max-tokens", "max_tokens", settings.maxTokens, false));
  LOOM_RETURN_IF_ERROR(
      take("--max-sentences", "max_sentences", settings.maxSentences, false));
  LOOM_RETURN_IF_ERROR(take("--warmup", "warmup", settings.warmup, true));
  LOOM_RETURN_IF_ERROR(take("--lr-scale", "lr_scale", settings.lrScale, true));
  LOOM_RETURN_IF_ERROR(
      take("--clip-norm", "clip_norm", settings.clipNorm, true));
  // A run resumes in the precision it was trained in: the checkpoint holds
  // fp32 master weights either way, but the other precision would be
  // another run's curve under this one's name.
  std::string precision = "fp32";
  if (auto it = metadata.find("precision"); it != metadata.end())
    precision = it->second;
  if (precision != "fp32" && precision != "bf16")
    return invalid("'" + path + "' records an unknown precision '" + precision +
                   "': it is damaged");
  if (!given.count("--precision"))
    settings.precision = precision;
  else if (settings.precision != precision)
    return invalid("'" + path + "' was trained with --precision " + precision +
                   "; the same run needs the same value (start a new run to "
                   "train in " +
                   settings.precision + ")");
  // What a run could have been started with (the flags' own ranges): a
  // damaged number must not become the schedule or the batch bounds.
  if (settings.maxTokens < 16 || settings.maxSentences < 1 ||
      settings.warmup < 1 || !(settings.lrScale > 0) ||
      !std::isfinite(settings.lrScale) || !(settings.clipNorm >= 0) ||
      !std::isfinite(settings.clipNorm))
    return invalid("'" + path +
                   "' records settings no run starts with (max_tokens " +
                   std::to_string(settings.maxTokens) + ", max_sentences " +
                   std::to_string(settings.maxSentences) + ", warmup " +
                   std::to_string(settings.warmup) + ", lr_scale " +
                   metadataNumber(settings.lrScale) + ", clip_norm " +
                   metadataNumber(settings.clipNorm) + "): it is damaged");
  return Status::success();
}

ErrorOr<RunDirectoryLock> RunDirectoryLock::acquire(const std::string &dir) {
  RunDirectoryLock lock;
  lock.dir = dir;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return Status::failure("cannot create '" + dir + "': " + ec.message(),
                             ErrorCode::Io);
    lock.created = true;
  }
  lock.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock.fd < 0)
    return Status::failure("cannot open '" + dir + "': " + std::strerror(errno),
                           ErrorCode::Io);
  if (::flock(lock.fd, LOCK_EX | LOCK_NB) != 0) {
    bool held = errno == EWOULDBLOCK;
    std::string why = std::strerror(errno);
    if (held)
      return Status::failure(
          "'" + dir +
              "' is being written by another run (or another command) now; "
              "wait for it to end, or train into another --out",
          ErrorCode::InvalidArgument);
    return Status::failure("cannot lock '" + dir + "': " + why, ErrorCode::Io);
  }
  return lock;
}

RunDirectoryLock::RunDirectoryLock(RunDirectoryLock &&other) noexcept
    : fd(other.fd), dir(std::move(other.dir)), created(other.created) {
  other.fd = -1;
  other.created = false;
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd < 0)
    return;
  if (created) {
    // Removes nothing but an empty directory: a refused run's.
    std::error_code ec;
    if (std::filesystem::is_empty(dir, ec) && !ec)
      std::filesystem::remove(dir, ec);
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
}

Status checkFreshRunDirectory(const std::string &dir, bool prepared) {
  ErrorOr<std::vector<std::pair<int64_t, std::string>>> checkpoints =
      listCheckpoints(dir);
  if (!checkpoints)
    return checkpoints.status();
  if (!checkpoints->empty())
    return invalid("'" + dir +
                   "' already holds a run's checkpoints; continue it with "
                   "--resume, or train into another --out");
  std::error_code ec;
  for (const char *name : {kModelConfig, kVocabulary, kModelWeights,
                           kTranslateExecutable, kMetricsFile}) {
    bool preparedFile = name == std::string(kModelConfig) ||
                        name == std::string(kVocabulary) ||
                        name == std::string(kTranslateExecutable);
    if (prepared && preparedFile)
      continue;
    if (std::filesystem::exists(dir + "/" + name, ec))
      return invalid("'" + dir + "' already holds a model ('" + name +
                     "'); train into another --out, or continue its run "
                     "with --resume");
  }
  return Status::success();
}

Status cleanRunDirectory(const std::string &dir) {
  for (const std::string &place : {dir, dir + "/checkpoints"})
    LOOM_RETURN_IF_ERROR(removeStaleTemporaries(place));
  return Status::success();
}

Status shareVocabulary(runtime::Collectives *job,
                       std::optional<text::Tokenizer> &tokenizer) {
  if (!job)
    return Status::success();
  bool leader = job->rank() == 0;
  std::string bytes = leader ? tokenizer->modelBytes() : std::string();
  LOOM_RETURN_IF_ERROR(job->broadcast(bytes, 0));
  if (leader)
    return Status::success();
  ErrorOr<text::Tokenizer> received = text::Tokenizer::load(bytes);
  if (!received)
    return received.status().withContext("the vocabulary rank 0 trained");
  tokenizer = std::move(*received);
  return Status::success();
}

Status writeRunDirectory(const std::string &dir,
                         const text::Tokenizer &tokenizer,
                         const std::string &configText) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/checkpoints", ec);
  if (ec)
    return Status::failure("cannot create '" + dir + "': " + ec.message(),
                           ErrorCode::Io);
  std::string vocabulary = tokenizer.modelBytes();
  LOOM_RETURN_IF_ERROR(
      writeFileAtomically(dir + "/" + kVocabulary,
                          {BytePiece{vocabulary.data(), vocabulary.size()}}));
  return writeFileAtomically(dir + "/" + kModelConfig,
                             {BytePiece{configText.data(), configText.size()}});
}

ErrorOr<RunCorpora> readRunCorpora(const std::vector<std::string> &train,
                                   const std::vector<std::string> &valid,
                                   const text::Tokenizer &tokenizer,
                                   int64_t maxLen) {
  RunCorpora corpora;
  ErrorOr<text::Corpus> trainCorpus =
      readPairs(train, tokenizer, maxLen, false, "train");
  if (!trainCorpus)
    return trainCorpus.status();
  for (const text::CorpusPair &pair : trainCorpus->pairs)
    addModelPair(pair, corpora.train.sources, corpora.train.targets);
  if (!valid.empty()) {
    ErrorOr<text::Corpus> corpus =
        readPairs(valid, tokenizer, maxLen, true, "valid");
    if (!corpus)
      return corpus.status();
    ValidationSet &set = corpora.valid.emplace();
    for (const text::CorpusPair &pair : corpus->pairs) {
      addModelPair(pair, set.sources, set.targets);
      set.references.push_back(pair.tgtText);
    }
  }
  return corpora;
}

Metadata runMetadata(const RunSettings &settings, const std::string &configText,
                     const text::Tokenizer &tokenizer, const TrainData &data) {
  Metadata run;
  run["seed"] = std::to_string(settings.seed);
  run["max_tokens"] = std::to_string(settings.maxTokens);
  run["max_sentences"] = std::to_string(settings.maxSentences);
  run["warmup"] = std::to_string(settings.warmup);
  run["lr_scale"] = metadataNumber(settings.lrScale);
  run["clip_norm"] = metadataNumber(settings.clipNorm);
  run["precision"] = settings.precision;
  run["config"] = configText;
  // What translators check the vocabulary against, and resuming too.
  run[kVocabularyChecksumKey] = vocabularyChecksum(tokenizer);
  run["train_fnv1a64"] = hex64(fnv1a64(idsBytes(data)));
  return run;
}

ErrorOr<Checkpoint> latestCheckpoint(const std::string &dir) {
  ErrorOr<std::vector<std::pair<int64_t, std::string>>> checkpoints =
      listCheckpoints(dir);
  if (!checkpoints)
    return checkpoints.status();
  if (checkpoints->empty())
    return Status::failure("--resume: '" + dir +
                               "/checkpoints' holds no checkpoint to resume "
                               "from",
                           ErrorCode::NotFound);
  Checkpoint latest;
  latest.path = checkpoints->back().second;
  ErrorOr<SafeTensorFile> file = loadSafetensors(latest.path);
  if (!file)
    return file.status();
  latest.file = std::move(*file);
  return latest;
}

ErrorOr<TrainPosition> resumeRun(runtime::Session &session,
                                 const Checkpoint &checkpoint,
                                 const Metadata &run, const std::string &dir) {
  const Metadata &saved = checkpoint.file.metadata;
  auto recorded = [&](const std::string &key) {
    auto it = saved.find(key);
    return it == saved.end() ? std::string() : it->second;
  };
  // The same run needs the same vocabulary, model and data: resuming with
  // any of them changed would silently train another model from this one.
  // (Checkpoints written before a key existed are not held to it.)
  if (saved.count(kVocabularyChecksumKey) &&
      recorded(kVocabularyChecksumKey) != run.at(kVocabularyChecksumKey))
    return invalid("'" + dir + "/" + kVocabulary + "' is not the vocabulary '" +
                   checkpoint.path + "' was trained with");
  if (recorded("config") != run.at("config"))
    return invalid("'" + dir + "/" + kModelConfig + "' is not the config '" +
                   checkpoint.path +
                   "' was trained with; train the new config into another "
                   "--out");
  if (saved.count("train_fnv1a64") &&
      recorded("train_fnv1a64") != run.at("train_fnv1a64"))
    return invalid("the --train corpus is not the one '" + checkpoint.path +
                   "' was trained on (its tokens differ); the same run needs "
                   "the same data");
  ErrorOr<TrainPosition> position = TrainPosition::load(saved);
  if (!position)
    return position.status().withContext(checkpoint.path);
  LOOM_RETURN_IF_ERROR(loadState(session, checkpoint.file, checkpoint.path));
  // Reports written after the checkpoint are written again as training
  // repeats those steps.
  LOOM_RETURN_IF_ERROR(truncateMetrics(dir, position->step));
  std::printf("resuming from %s: step %lld, epoch %lld, batch %lld\n",
              checkpoint.path.c_str(), (long long)position->step,
              (long long)position->epoch, (long long)position->batch);
  return position;
}

int runObservedTraining(runtime::Session &session,
                        const TrainerOptions &options, TrainPosition position,
                        const RunCorpora &corpora,
                        const text::Tokenizer &tokenizer,
                        const Metadata &runMetadata,
                        const RunPresentation &presentation) {
  ConsoleObserver console(presentation.progressBar, options.dir);
  MetricsObserver metrics(options.dir);
  std::vector<TrainObserver *> observers = {&console, &metrics};
  observers.insert(observers.end(), presentation.observers.begin(),
                   presentation.observers.end());
  std::optional<CurvesObserver> curves;
  if (!presentation.plotScript.empty() && corpora.valid) {
    curves.emplace(options.dir, presentation.plotScript, presentation.command);
    observers.push_back(&*curves);
  }
  StopOnSignals stopOnSignals;
  ErrorOr<TrainEnd> end = train(session, options, position, corpora.train,
                                corpora.valid ? &*corpora.valid : nullptr,
                                &tokenizer, runMetadata, observers);
  if (!end) {
    std::fflush(stdout);
    std::fprintf(stderr, "\n%s: error: %s\n", presentation.command.c_str(),
                 end.error().c_str());
    if (presentation.failure)
      *presentation.failure = end.status();
    return 1;
  }
  return end->signal != 0 ? 130 : 0;
}

} // namespace loom::train
