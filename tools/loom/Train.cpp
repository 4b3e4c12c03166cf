//===- Train.cpp - `loom train` -------------------------------------------===//
//
// From two text files to a model directory that `loom translate` reads
// (api/train/TrainingRun.h lists its files): the trainer library's job
// (api/train/TrainingJob.h), which `loom-train` runs too, with the model
// compiled in this process (CompilingSource: a vocabulary trained on the
// corpus, @train_step for the batches and the device). With --resume, the
// directory's config, vocabulary and latest checkpoint are loaded and
// training continues where it stopped.
//
//===----------------------------------------------------------------------===//

#include "tools/TrainFlags.h"
#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/TrainingProgram.h"

#include "api/train/TrainingJob.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

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
  std::string precision = "fp32";
  int64_t vocabSize = 0;
  double bucketMb = 25;
};

/// Checks the options that change the compiled program; the job checks the
/// rest.
llvm::Error checkCompiledOptions(const TrainOptions &o) {
  train::RunSettings settings;
  settings.maxTokens = o.maxTokens;
  settings.maxSentences = o.maxSentences;
  settings.warmup = o.warmup;
  settings.lrScale = o.lrScale;
  settings.clipNorm = o.clipNorm;
  if (llvm::Error err =
          checkCompiledSettings(settings, o.vocabSize, o.bucketMb))
    return err;
  if (o.resume && (!o.model.preset.empty() || !o.model.configPath.empty()))
    return error("--resume takes the model from '" + o.out +
                 "/config.pbtxt'; leave out --preset and --config");
  if (o.resume && o.vocabSize != 0)
    return error("--resume takes the vocabulary from '" + o.out +
                 "/spm.model'; leave out --vocab-size");
  return llvm::Error::success();
}

int runTrain(const TrainOptions &o, CLI::App *cmd) {
  train::JobOptions job = jobOptions(o, "loom train");
  if (llvm::Error err = toError(train::checkJobOptions(job)))
    return fail("train", std::move(err));
  if (llvm::Error err = checkCompiledOptions(o))
    return fail("train", std::move(err));
  job.settings.maxTokens = o.maxTokens;
  job.settings.maxSentences = o.maxSentences;
  job.settings.warmup = o.warmup;
  job.settings.lrScale = o.lrScale;
  job.settings.clipNorm = o.clipNorm;
  job.settings.precision = o.precision;
  for (const char *flag :
       {"--seed", "--max-tokens", "--max-sentences", "--warmup", "--lr-scale",
        "--clip-norm", "--precision"})
    if (cmd->count(flag))
      job.givenSettings.insert(flag);
  CompilingSource source(o.model, o.train, o.vocabSize, o.bucketMb);
  ErrorOr<int> code = train::runTrainingJob(std::move(job), source);
  if (!code)
    return fail("train", toError(code.status()));
  return *code;
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
  CLI::Option *precision = addTrainingPrecisionOption(cmd, o->precision);
  precision->description(precision->get_description() +
                         ". A resumed run keeps its own");
  cmd->add_option("--vocab-size", o->vocabSize,
                  "SentencePiece pieces (default: the config's tgt_vocab)");
  cmd->add_option("--bucket-mb", o->bucketMb,
                  "Under an MPI launcher: MiB of gradients per all-reduce")
      ->capture_default_str();
  cmd->callback([o, cmd, &exitCode] { exitCode = runTrain(*o, cmd); });
}

} // namespace loom::cli
