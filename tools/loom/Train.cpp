//===- Train.cpp - `loom train` -------------------------------------------===//
//
// From two text files to a model directory that `loom translate` reads:
//
//   DIR/spm.model        SentencePiece, trained here on both sides of the
//                        training corpus (one joint vocabulary)
//   DIR/config.pbtxt     the model's config, its vocabulary sizes set to
//                        the tokenizer's
//   DIR/checkpoints/     step-<step>.safetensors: parameters, Adam moments
//                        and where training stood; the last --keep and the
//                        best (by validation BLEU)
//   DIR/metrics.jsonl    one JSON object per report and per validation
//   DIR/translate.loomx  the decoder compiled for this CPU (ModelDir.h)
//   DIR/model.safetensors  the parameters when training ends
//
// With --resume, the directory's config, vocabulary and latest checkpoint
// are loaded and training continues where it stopped.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Checkpoint.h"
#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/CpuBackend.h"
#include "tools/loom/ModelDir.h"
#include "tools/loom/Trainer.h"

#include "api/Translator.h"
#include "runtime/AtomicFile.h"
#include "runtime/Safetensors.h"
#include "runtime/mpi/MpiCollectives.h"
#ifdef LOOM_NCCL
#include "runtime/cuda/NcclCollectives.h"
#endif
#include "text/Corpus.h"
#include "text/Tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A week: a wait longer than that is a hang whatever the job.
constexpr double kMaxCommTimeout = 7 * 24 * 3600;

struct TrainOptions {
  ModelOptions model;
  std::vector<std::string> train, valid;
  std::string out;
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  int64_t steps = 0, epochs = 0;
  uint64_t seed = 1;
  int threads = 0;
  std::string device = "cpu";
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  int64_t validEvery = 0;
  int64_t logEvery = 100;
  int64_t keep = 5;
  int64_t vocabSize = 0;
  std::string progress = "auto";
  bool resume = false;
  bool noPlot = false;
  double commTimeout = 600;
  double bucketMb = 25;
};

std::string hexHash(const std::string &bytes) {
  return llvm::formatv("{0:x16}",
                       llvm::xxh3_64bits(llvm::arrayRefFromStringRef(bytes)))
      .str();
}

llvm::Error writeText(const std::string &path, const std::string &text) {
  return toError(
      writeFileAtomically(path, {BytePiece{text.data(), text.size()}}));
}

/// Reads a parallel corpus as the model takes it: source ids + eos, target
/// bos + ids + eos, both within the model's length.
llvm::Expected<text::Corpus> readPairs(const std::vector<std::string> &files,
                                       const text::Tokenizer &tokenizer,
                                       int64_t maxLen, bool keepText,
                                       const char *what) {
  auto encode = [&](const std::string &line) { return tokenizer.encode(line); };
  text::CorpusOptions options;
  options.maxLen = maxLen - 2; // room for bos and eos
  options.keepText = keepText;
  auto corpus = text::readCorpus(files[0], files[1], encode, encode, options);
  if (!corpus)
    return error(corpus.error());
  if (corpus->pairs.empty())
    return error(llvm::formatv("the {0} corpus has no usable pairs ({1})", what,
                               text::describe(corpus->stats, options.maxLen)));
  std::printf("%s: %s\n", what,
              text::describe(corpus->stats, options.maxLen).c_str());
  return std::move(*corpus);
}

/// On --resume: the run's settings from its checkpoint, for every option
/// not given again. The data order depends on the seed and the batch
/// bounds, so those must not change; the schedule may.
llvm::Error takeRunSettings(const std::string &path, const Metadata &m,
                            TrainOptions &o, CLI::App *cmd) {
  auto take = [&](const char *flag, const char *key, auto &value,
                  bool mayChange) -> llvm::Error {
    auto it = m.find(key);
    if (it == m.end())
      return error("'" + path + "' does not record " + key);
    std::remove_reference_t<decltype(value)> saved{};
    std::istringstream in(it->second);
    if (!(in >> saved))
      return error("'" + path + "' records an unreadable " + key + " '" +
                   it->second + "'");
    if (cmd->count(flag) == 0) {
      value = saved;
    } else if (value != saved) {
      if (!mayChange)
        return error(llvm::formatv("'{0}' was trained with {1} {2}; the "
                                   "same run needs the same value",
                                   path, flag, it->second));
      std::printf("note: %s changes from %s\n", flag, it->second.c_str());
    }
    return llvm::Error::success();
  };
  if (llvm::Error err = take("--seed", "seed", o.seed, false))
    return err;
  if (llvm::Error err = take("--max-tokens", "max_tokens", o.maxTokens, false))
    return err;
  if (llvm::Error err =
          take("--max-sentences", "max_sentences", o.maxSentences, false))
    return err;
  if (llvm::Error err = take("--warmup", "warmup", o.warmup, true))
    return err;
  if (llvm::Error err = take("--lr-scale", "lr_scale", o.lrScale, true))
    return err;
  return take("--clip-norm", "clip_norm", o.clipNorm, true);
}

/// The training data's ids as bytes, to hash: a resumed run must see the
/// same data.
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

int runTrain(TrainOptions o, CLI::App *cmd) {
  auto fail = [](llvm::Error err) {
    return cli::fail("train", std::move(err));
  };
  if (o.maxTokens < 16 || o.maxSentences < 1 || o.steps < 0 || o.epochs < 0 ||
      o.warmup < 1 || !(o.lrScale > 0) || o.clipNorm < 0 || o.validEvery < 0 ||
      o.logEvery < 1 || o.keep < 1)
    return fail(error("--max-tokens (>= 16), --max-sentences, --warmup, "
                      "--lr-scale, --log-every and --keep must be positive; "
                      "--steps, --epochs, --clip-norm and --valid-every must "
                      "not be negative"));
  if (o.steps == 0 && o.epochs == 0)
    return fail(error("say how long to train: --steps N or --epochs N"));
  if (!std::isfinite(o.lrScale) || !std::isfinite(o.clipNorm))
    return fail(error("--lr-scale and --clip-norm must be finite numbers"));
  if (!(o.commTimeout > 0 && o.commTimeout <= kMaxCommTimeout))
    return fail(error(llvm::formatv("--comm-timeout must be in (0, {0}] "
                                    "seconds, got {1}",
                                    kMaxCommTimeout, o.commTimeout)));
  if (llvm::Expected<int64_t> bucket = bucketBytes(o.bucketMb); !bucket)
    return fail(bucket.takeError());
  // Under an MPI launcher (mpirun, srun) this process is one rank of a
  // data-parallel job.
  std::shared_ptr<runtime::Collectives> job;
  if (runtime::launchedByMpiLauncher()) {
    auto joined = runtime::joinMpiJob(o.commTimeout);
    if (!joined)
      return fail(toError(joined.status()));
    if ((*joined)->size() > 1)
      job = *joined;
  }
  bool leader = !job || job->rank() == 0;
  // A job on GPUs: each rank takes the GPU of its index among the ranks on
  // its machine (unless --device names one), and sums gradients with NCCL.
  if (job && o.device != "cpu") {
#ifdef LOOM_NCCL
    if (o.device == "cuda") {
      ErrorOr<int> local = runtime::mpiLocalRank();
      if (!local)
        return fail(toError(local.status()));
      o.device = "cuda:" + std::to_string(*local);
    }
#else
    return fail(error("this build has no NCCL (nccl.h was not found): a "
                      "data-parallel job runs on CPU processes only"));
#endif
  }
  // One rank reports; the others' output would repeat it.
  if (!leader && !std::freopen("/dev/null", "w", stdout))
    return fail(
        error("cannot silence the output of rank " + llvm::Twine(job->rank())));
  if (o.vocabSize < 0 || o.vocabSize > kMaxVocab)
    return fail(error(llvm::formatv("--vocab-size must be in [5, {0}], got "
                                    "{1}",
                                    kMaxVocab, o.vocabSize)));
  const std::string &dir = o.out;
  if (llvm::Error err = checkOutputDir(dir, "--out"))
    return fail(std::move(err));
  for (size_t i = 0; i < o.train.size(); ++i)
    if (llvm::Error err = checkInputFile(o.train[i], "--train"))
      return fail(std::move(err));
  for (size_t i = 0; i < o.valid.size(); ++i)
    if (llvm::Error err = checkInputFile(o.valid[i], "--valid"))
      return fail(std::move(err));
  std::error_code ec;
  // Temporaries a crashed run left behind, before anything new is written.
  for (const std::string &place : {dir, dir + "/checkpoints"})
    if (Status cleaned = removeStaleTemporaries(place); !cleaned.ok())
      return fail(toError(cleaned));

  TransformerConfig config;
  std::optional<text::Tokenizer> tokenizer;
  TrainPosition position;
  std::string resumeFrom;
  std::optional<SafeTensorFile> checkpoint; // read once, on --resume
  auto checkpoints = listCheckpoints(dir);
  if (!checkpoints)
    return fail(checkpoints.takeError());
  if (o.resume) {
    if (!o.model.preset.empty() || !o.model.configPath.empty())
      return fail(error("--resume takes the model from '" + dir +
                        "/config.pbtxt'; leave out --preset and --config"));
    if (o.vocabSize != 0)
      return fail(error("--resume takes the vocabulary from '" + dir +
                        "/spm.model'; leave out --vocab-size"));
    if (checkpoints->empty())
      return fail(error("--resume: '" + dir +
                        "/checkpoints' holds no checkpoint to resume from"));
    auto loaded = loadConfig(dir + "/config.pbtxt");
    if (!loaded)
      return fail(loaded.takeError());
    config = *loaded;
    auto spm = text::Tokenizer::loadFile(dir + "/spm.model");
    if (!spm)
      return fail(error(spm.error()));
    tokenizer = std::move(*spm);
    resumeFrom = checkpoints->back().second;
    auto file = loadSafetensors(resumeFrom);
    if (!file)
      return fail(error(file.error()));
    checkpoint = std::move(*file);
    if (llvm::Error err =
            takeRunSettings(resumeFrom, checkpoint->metadata, o, cmd))
      return fail(std::move(err));
  } else {
    if (!checkpoints->empty())
      return fail(error("'" + dir +
                        "' already holds a run's checkpoints; continue it "
                        "with --resume, or train into another --out"));
    // A new run starts from an empty directory: one that holds a model
    // already would lose its vocabulary, config and weights to this run.
    for (const char *name : {kModelConfig, kVocabulary, kModelWeights,
                             kTranslateExecutable, kMetricsFile})
      if (std::filesystem::exists(dir + "/" + name, ec))
        return fail(error("'" + dir + "' already holds a model ('" + name +
                          "'); train into another --out, or continue its "
                          "run with --resume"));
    auto loaded = o.model.load();
    if (!loaded)
      return fail(loaded.takeError());
    config = *loaded;
    // One vocabulary for both languages, as large as the config's target
    // vocabulary unless --vocab-size says otherwise.
    text::TokenizerTrainOptions spmOptions;
    spmOptions.vocabSize =
        int32_t(o.vocabSize > 0 ? o.vocabSize : config.tgt_vocab());
    spmOptions.seed = uint32_t(o.seed);
    auto start = std::chrono::steady_clock::now();
    // Rank 0 trains the vocabulary; every rank takes its bytes.
    std::string spmBytes;
    if (leader) {
      auto spm = text::Tokenizer::train(o.train, spmOptions);
      if (!spm)
        return fail(
            error("training the SentencePiece vocabulary: " + spm.error()));
      spmBytes = spm->modelBytes();
      tokenizer = std::move(*spm);
    }
    if (job) {
      if (Status shared = job->broadcast(spmBytes, 0); !shared.ok())
        return fail(toError(shared));
      if (!leader) {
        auto spm = text::Tokenizer::load(spmBytes);
        if (!spm)
          return fail(error("the vocabulary rank 0 trained: " + spm.error()));
        tokenizer = std::move(*spm);
      }
    }
    std::printf(
        "vocabulary: %d SentencePiece pieces (unigram, joint) in "
        "%.1fs\n",
        tokenizer->vocabSize(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    config.set_src_vocab(tokenizer->vocabSize());
    config.set_tgt_vocab(tokenizer->vocabSize());
    if (llvm::Error err = validateConfig(config))
      return fail(std::move(err));
  }
  if (config.src_vocab() < tokenizer->vocabSize() ||
      config.tgt_vocab() < tokenizer->vocabSize())
    return fail(error(llvm::formatv(
        "the vocabulary has {0} pieces but the config's src_vocab is {1} and "
        "tgt_vocab {2}",
        tokenizer->vocabSize(), config.src_vocab(), config.tgt_vocab())));

  // The data, as ids.
  int64_t maxLen = config.max_len();
  if (o.maxTokens < maxLen)
    return fail(error(llvm::formatv(
        "--max-tokens {0} is less than the model's max_len {1}: a batch "
        "must fit the longest sentence",
        o.maxTokens, maxLen)));
  auto trainCorpus = readPairs(o.train, *tokenizer, maxLen, false, "train");
  if (!trainCorpus)
    return fail(trainCorpus.takeError());
  TrainData data;
  for (const text::CorpusPair &pair : trainCorpus->pairs)
    addModelPair(pair, data.sources, data.targets);
  std::optional<ValidationSet> valid;
  if (!o.valid.empty()) {
    auto corpus = readPairs(o.valid, *tokenizer, maxLen, true, "valid");
    if (!corpus)
      return fail(corpus.takeError());
    valid.emplace();
    for (const text::CorpusPair &pair : corpus->pairs) {
      addModelPair(pair, valid->sources, valid->targets);
      valid->references.push_back(pair.tgtText);
    }
  }

  // Compile @train_step (and the validation entries) for these batches.
  CompilePipelineOptions pipeline =
      pipelineFor(config, o.maxTokens, maxLen, o.maxSentences);
  pipeline.training.warmup = o.warmup;
  pipeline.training.lrScale = o.lrScale;
  pipeline.training.clipNorm = o.clipNorm;
  pipeline.training.dataParallel = job != nullptr;
  // Checked when the options were read.
  pipeline.training.bucketBytes = llvm::cantFail(bucketBytes(o.bucketMb));
  auto device = openCommandDevice(o.device, o.threads);
#ifdef LOOM_NCCL
  if (device && job && o.device != "cpu") {
    auto gpus = cuda::joinNcclJob(
        job, std::stoi(o.device.substr(o.device.find(':') + 1)), o.commTimeout);
    if (!gpus)
      return fail(toError(gpus.status()));
    job = *gpus;
  }
#endif
  if (!device)
    return fail(device.takeError());
  auto compileStart = std::chrono::steady_clock::now();
  auto exe = compileExecutable(config, pipeline, codeTargetOf(**device));
  if (!exe)
    return fail(exe.takeError());
  auto model = loadSession(std::move(*exe), *device);
  if (!model)
    return fail(model.takeError());
  int64_t parameters = (*model)->program().parameterCount();
  if (job)
    (*model)->setCollectives(job);
  // Only now, with the data read and the model compiled, does a new run
  // write its directory: a run refused above leaves nothing behind. Rank 0
  // writes it for the job.
  if (!o.resume && leader) {
    std::filesystem::create_directories(dir + "/checkpoints", ec);
    if (ec)
      return fail(error("cannot create '" + dir + "': " + ec.message()));
    if (llvm::Error err =
            writeText(dir + "/" + kVocabulary, tokenizer->modelBytes()))
      return fail(std::move(err));
    std::string text;
    google::protobuf::TextFormat::PrintToString(config, &text);
    if (llvm::Error err = writeText(dir + "/" + kModelConfig, text))
      return fail(std::move(err));
  }
  // The decoder `loom translate` and `loom export` use, compiled now so the
  // directory translates without compiling (and is rebuilt if stale).
  if (leader)
    if (llvm::Error err = writeTranslateExecutable(dir, config))
      return fail(std::move(err));
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();
  std::string where =
      cpuThreads(**model) > 0
          ? llvm::formatv("this CPU in {0:f1}s; {1} threads", compileSeconds,
                          cpuThreads(**model))
                .str()
          : llvm::formatv("{0} in {1:f1}s", (*model)->device().description(),
                          compileSeconds)
                .str();
  if (job)
    where += llvm::formatv("; {0} ranks ({1}), gradients in all-reduces of "
                           "{2} MiB",
                           job->size(), job->description(), o.bucketMb)
                 .str();
  std::printf("model: d_model %lld, %lld heads, %lld+%lld layers, %lld "
              "parameters; compiled for %s\n",
              (long long)config.d_model(), (long long)config.heads(),
              (long long)config.encoder_layers(),
              (long long)config.decoder_layers(), (long long)parameters,
              where.c_str());

  // What every checkpoint of this run records beside its position.
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  Metadata run;
  run["seed"] = std::to_string(o.seed);
  run["max_tokens"] = std::to_string(o.maxTokens);
  run["max_sentences"] = std::to_string(o.maxSentences);
  run["warmup"] = std::to_string(o.warmup);
  run["lr_scale"] = metadataNumber(o.lrScale);
  run["clip_norm"] = metadataNumber(o.clipNorm);
  run["config"] = configText;
  run["vocabulary_xxh3"] = hexHash(tokenizer->modelBytes());
  // What translators check the vocabulary against (no xxh3 in the runtime).
  run[kVocabularyChecksumKey] = vocabularyChecksum(*tokenizer);
  run["train_xxh3"] = hexHash(idsBytes(data));

  if (o.resume) {
    if (llvm::Error err = loadState(**model, *checkpoint, resumeFrom))
      return fail(std::move(err));
    Metadata &metadata = checkpoint->metadata;
    if (metadata["vocabulary_xxh3"] != run["vocabulary_xxh3"])
      return fail(error("'" + dir + "/spm.model' is not the vocabulary '" +
                        resumeFrom + "' was trained with"));
    // The same run needs the same model and the same data: resuming with
    // either changed would silently train another model from this one.
    if (metadata["config"] != run["config"])
      return fail(error("'" + dir + "/" + kModelConfig +
                        "' is not the config '" + resumeFrom +
                        "' was trained with; train the new config into "
                        "another --out"));
    if (metadata.count("train_xxh3") &&
        metadata["train_xxh3"] != run["train_xxh3"])
      return fail(error("the --train corpus is not the one '" + resumeFrom +
                        "' was trained on (its tokens differ); the same run "
                        "needs the same data"));
    auto at = TrainPosition::load(metadata);
    if (!at)
      return fail(at.takeError());
    position = *at;
    // Reports written after the checkpoint are written again as training
    // repeats those steps.
    if (llvm::Error err = truncateMetrics(dir, position.step))
      return fail(std::move(err));
    std::printf("resuming from %s: step %lld, epoch %lld, batch %lld\n",
                resumeFrom.c_str(), (long long)position.step,
                (long long)position.epoch, (long long)position.batch);
  } else {
    if (llvm::Error err = initParameters(**model, o.seed))
      return fail(std::move(err));
  }

  TrainSettings settings;
  settings.dir = dir;
  settings.seed = o.seed;
  settings.maxTokens = o.maxTokens;
  settings.maxSentences = o.maxSentences;
  settings.steps = o.steps;
  settings.epochs = o.epochs;
  settings.validEvery = o.validEvery;
  settings.logEvery = o.logEvery;
  settings.keep = o.keep;
  settings.schedule = pipeline.training;
  settings.maxLen = maxLen;
  settings.progressBar =
      o.progress == "bar" || (o.progress == "auto" && ::isatty(STDOUT_FILENO));
  settings.plotCurves = !o.noPlot;
  settings.job = job.get();
  int code = runTraining(**model, settings, position, data,
                         valid ? &*valid : nullptr, *tokenizer, run);
  // A job's ranks leave together when they all finished (an MPI job whose
  // rank exits without saying so is torn down as failed); a rank that
  // failed exits at once, and the launcher ends the others.
  if (job && (code == 0 || code == 130))
    if (Status left = runtime::leaveMpiJob(); !left.ok())
      return fail(toError(left));
  return code;
}

} // namespace

void addTrainCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App *cmd = app.add_subcommand(
      "train", "Train a translator from a parallel corpus into a model "
               "directory");
  o->model.addTo(cmd);
  cmd->add_option("--train", o->train, "Training corpus: SRC TGT")
      ->expected(2)
      ->required();
  cmd->add_option("--valid", o->valid,
                  "Validation corpus: SRC TGT (loss and greedy BLEU)")
      ->expected(2);
  cmd->add_option("--out", o->out, "The model directory")->required();
  cmd->add_option("--max-tokens", o->maxTokens,
                  "Padded tokens per batch and side")
      ->capture_default_str();
  cmd->add_option("--max-sentences", o->maxSentences, "Sentences per batch")
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "Stop after this many steps");
  cmd->add_option("--epochs", o->epochs, "Stop after this many epochs");
  cmd->add_option("--seed", o->seed,
                  "Seeds the vocabulary, initial parameters, batch order "
                  "and dropout")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--device", o->device,
                  "Where training runs: cpu, or cuda (cuda:N for GPU N)")
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up steps of the schedule")
      ->capture_default_str();
  cmd->add_option("--lr-scale", o->lrScale,
                  "lr = scale * d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5)")
      ->capture_default_str();
  cmd->add_option("--clip-norm", o->clipNorm,
                  "Clip the global gradient norm (0: no clipping)")
      ->capture_default_str();
  cmd->add_option("--valid-every", o->validEvery,
                  "Validate and checkpoint every N steps (0: every epoch)")
      ->capture_default_str();
  cmd->add_option("--log-every", o->logEvery, "Report every N steps")
      ->capture_default_str();
  cmd->add_option("--keep", o->keep, "Step checkpoints kept, besides the best")
      ->capture_default_str();
  cmd->add_option("--vocab-size", o->vocabSize,
                  "SentencePiece pieces (default: the config's tgt_vocab)");
  cmd->add_option("--progress", o->progress,
                  "auto (a bar on a terminal), bar or lines")
      ->check(CLI::IsMember({"auto", "bar", "lines"}))
      ->capture_default_str();
  cmd->add_option("--comm-timeout", o->commTimeout,
                  "Under an MPI launcher: seconds a rank waits for the "
                  "others before it ends the job")
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o->bucketMb,
                  "Under an MPI launcher: MiB of gradients per all-reduce")
      ->capture_default_str();
  cmd->add_flag("--no-plot", o->noPlot,
                "Do not draw DIR/curves.png after each validation");
  cmd->add_flag("--resume", o->resume,
                "Continue the run in --out from its latest checkpoint");
  cmd->callback([o, cmd, &exitCode] { exitCode = runTrain(*o, cmd); });
}

} // namespace loom::cli
