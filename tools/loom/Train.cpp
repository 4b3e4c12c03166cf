//===- Train.cpp - `loom train` -------------------------------------------===//
//
// From two text files to a model directory that `loom translate` reads
// (api/train/TrainingRun.h lists its files): trains the vocabulary, compiles
// @train_step for the batches and the device, and trains through the
// trainer library, which `loom-train` uses too. With --resume, the
// directory's config, vocabulary and latest checkpoint are loaded and
// training continues where it stopped.
//
//===----------------------------------------------------------------------===//

#include "tools/TrainFlags.h"
#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"
#include "tools/loom/Sessions.h"
#include "tools/loom/TrainingProgram.h"

#include "api/Translator.h"
#include "api/train/Job.h"
#include "api/train/TrainingRun.h"
#include "text/Corpus.h"
#include "text/Tokenizer.h"

#include "llvm/Support/FormatVariadic.h"

#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The run's options (TrainFlags.h) and those compiled into @train_step.
struct TrainOptions : RunFlags {
  ModelOptions model;
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  int64_t vocabSize = 0;
  double bucketMb = 25;
};

/// The run settings of the options.
train::RunSettings runSettings(const TrainOptions &o) {
  train::RunSettings settings;
  settings.seed = o.seed;
  settings.maxTokens = o.maxTokens;
  settings.maxSentences = o.maxSentences;
  settings.warmup = o.warmup;
  settings.lrScale = o.lrScale;
  settings.clipNorm = o.clipNorm;
  return settings;
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
  if (!(o.timeLimit >= 0) || !std::isfinite(o.timeLimit))
    return fail(error("--time-limit must be a number of seconds, 0 or more"));
  if (!std::isfinite(o.lrScale) || !std::isfinite(o.clipNorm))
    return fail(error("--lr-scale and --clip-norm must be finite numbers"));
  if (llvm::Expected<int64_t> bucket = bucketBytes(o.bucketMb); !bucket)
    return fail(bucket.takeError());
  // Under an MPI launcher (mpirun, srun) this process is one rank of a
  // data-parallel job.
  if (o.device.empty())
    o.device = "cpu";
  auto joined = toExpected(train::joinLaunchedJob(o.commTimeout));
  if (!joined)
    return fail(joined.takeError());
  std::shared_ptr<runtime::Collectives> job = *joined;
  bool leader = !job || job->rank() == 0;
  auto deviceOfRank = toExpected(train::rankDevice(o.device, job.get()));
  if (!deviceOfRank)
    return fail(deviceOfRank.takeError());
  o.device = *deviceOfRank;
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
  if (llvm::Error err = toError(train::cleanRunDirectory(dir)))
    return fail(std::move(err));

  TransformerConfig config;
  std::optional<text::Tokenizer> tokenizer;
  std::optional<train::Checkpoint> checkpoint; // read once, on --resume
  if (o.resume) {
    if (!o.model.preset.empty() || !o.model.configPath.empty())
      return fail(error("--resume takes the model from '" + dir +
                        "/config.pbtxt'; leave out --preset and --config"));
    if (o.vocabSize != 0)
      return fail(error("--resume takes the vocabulary from '" + dir +
                        "/spm.model'; leave out --vocab-size"));
    auto latest = toExpected(train::latestCheckpoint(dir));
    if (!latest)
      return fail(latest.takeError());
    checkpoint = std::move(*latest);
    auto loaded = loadConfig(dir + "/config.pbtxt");
    if (!loaded)
      return fail(loaded.takeError());
    config = *loaded;
    auto spm = text::Tokenizer::loadFile(dir + "/spm.model");
    if (!spm)
      return fail(error(spm.error()));
    tokenizer = std::move(*spm);
    std::set<std::string> given;
    for (const char *flag : {"--seed", "--max-tokens", "--max-sentences",
                             "--warmup", "--lr-scale", "--clip-norm"})
      if (cmd->count(flag))
        given.insert(flag);
    train::RunSettings settings = runSettings(o);
    if (llvm::Error err = toError(train::takeRecordedSettings(
            checkpoint->path, checkpoint->file.metadata, given, settings)))
      return fail(std::move(err));
    o.seed = settings.seed;
    o.maxTokens = settings.maxTokens;
    o.maxSentences = settings.maxSentences;
    o.warmup = settings.warmup;
    o.lrScale = settings.lrScale;
    o.clipNorm = settings.clipNorm;
  } else {
    if (llvm::Error err = toError(train::checkFreshRunDirectory(dir)))
      return fail(std::move(err));
    auto loaded = o.model.load();
    if (!loaded)
      return fail(loaded.takeError());
    config = *loaded;
    // One vocabulary for both languages, as large as the config's target
    // vocabulary unless --vocab-size says otherwise. Rank 0 trains it;
    // every rank takes it.
    if (leader) {
      auto spm = trainVocabulary(
          o.train, o.vocabSize > 0 ? o.vocabSize : config.tgt_vocab(), o.seed);
      if (!spm)
        return fail(spm.takeError());
      tokenizer = std::move(*spm);
    }
    if (llvm::Error err = toError(train::shareVocabulary(job.get(), tokenizer)))
      return fail(std::move(err));
    if (llvm::Error err = fitVocabulary(config, *tokenizer))
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
  auto corpora =
      toExpected(train::readRunCorpora(o.train, o.valid, *tokenizer, maxLen));
  if (!corpora)
    return fail(corpora.takeError());

  // Compile @train_step (and the validation entries) for these batches.
  CompilePipelineOptions pipeline =
      trainingPipeline(config, runSettings(o), job != nullptr,
                       // Checked when the options were read.
                       llvm::cantFail(bucketBytes(o.bucketMb)));
  auto device = openCommandDevice(o.device, o.threads);
  if (!device)
    return fail(device.takeError());
  auto onDevice = toExpected(train::jobOnDevice(job, o.device, o.commTimeout));
  if (!onDevice)
    return fail(onDevice.takeError());
  job = *onDevice;
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
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  if (!o.resume && leader)
    if (llvm::Error err =
            toError(train::writeRunDirectory(dir, *tokenizer, configText)))
      return fail(std::move(err));
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
  train::Metadata run = train::runMetadata(runSettings(o), configText,
                                           *tokenizer, corpora->train);
  train::TrainPosition position;
  if (o.resume) {
    auto at = toExpected(train::resumeRun(**model, *checkpoint, run, dir));
    if (!at)
      return fail(at.takeError());
    position = *at;
  } else {
    if (llvm::Error err = initParameters(**model, o.seed))
      return fail(std::move(err));
  }

  train::TrainerOptions settings = trainerOptions(
      o, dir, runSettings(o), config.d_model(), maxLen, job.get());
  train::RunPresentation presentation;
  presentation.progressBar =
      o.progress == "bar" || (o.progress == "auto" && ::isatty(STDOUT_FILENO));
  presentation.command = "loom train";
  if (!o.noPlot && corpora->valid) {
    auto script = programBesideLoom("loom-plot");
    if (script)
      presentation.plotScript = *script;
    else
      std::fprintf(stderr, "loom train: %s; no curves are drawn in this run\n",
                   llvm::toString(script.takeError()).c_str());
  }
  int code = train::runObservedTraining(**model, settings, position, *corpora,
                                        *tokenizer, run, presentation);
  // A job's ranks leave together when they all finished (an MPI job whose
  // rank exits without saying so is torn down as failed); a rank that
  // failed exits at once, and the launcher ends the others.
  if (job && (code == 0 || code == 130))
    if (Status left = train::leaveJob(); !left.ok())
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
  addRunFlags(cmd, *o, "The model directory", "by default cpu");
  cmd->get_option("--out")->required();
  cmd->add_option("--max-tokens", o->maxTokens,
                  "Padded tokens per batch and side")
      ->capture_default_str();
  cmd->add_option("--max-sentences", o->maxSentences, "Sentences per batch")
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
  cmd->add_option("--vocab-size", o->vocabSize,
                  "SentencePiece pieces (default: the config's tgt_vocab)");
  cmd->add_option("--bucket-mb", o->bucketMb,
                  "Under an MPI launcher: MiB of gradients per all-reduce")
      ->capture_default_str();
  cmd->callback([o, cmd, &exitCode] { exitCode = runTrain(*o, cmd); });
}

} // namespace loom::cli
