//===- main.cpp - loom-train: training without the compiler ---------------===//
//
// Trains with a folder `loom prepare` wrote: the config, the vocabulary, the
// compiled @train_step (train.loomx) and what it was compiled with
// (prepare.json). It links the runtime, text/ and the trainer library only:
// no compiler, so it runs on a GPU machine or a cluster node with the
// runtime's libraries alone, and `mpirun -np N loom-train ...` trains across
// processes. The run goes into the folder it sits in (or --out), as `loom
// train --out` would write it, and bit for bit the same for the same seed,
// threads and data: both train through api/train/.
//
//===----------------------------------------------------------------------===//

#include "api/train/Job.h"
#include "api/train/Prepared.h"
#include "api/train/TrainingRun.h"
#include "runtime/Program.h"
#include "runtime/Weights.h"
#include "tools/BinaryDir.h"
#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"
#include "tools/TrainFlags.h"

#include <google/protobuf/text_format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <unistd.h>

using namespace loom;

namespace {

struct Options : RunFlags {
  std::string prepared;
};

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

/// Trains; the process's exit code, or the error that stopped it first.
ErrorOr<int> trainPrepared(Options o, const std::set<std::string> &given) {
  if (o.steps < 0 || o.epochs < 0 || o.validEvery < 0 || o.logEvery < 1 ||
      o.keep < 1)
    return invalid("--log-every and --keep must be positive; --steps, "
                   "--epochs and --valid-every must not be negative");
  if (o.steps == 0 && o.epochs == 0)
    return invalid("say how long to train: --steps N or --epochs N");
  if (!(o.timeLimit >= 0) || !std::isfinite(o.timeLimit))
    return invalid("--time-limit must be a number of seconds, 0 or more");
  std::string folder = o.prepared.empty() ? binaryDir() : o.prepared;
  ErrorOr<train::PreparedFolder> prepared = train::openPrepared(folder);
  if (!prepared)
    return prepared.status();
  std::string dir = o.out.empty() ? folder : o.out;
  std::error_code ec;
  bool inPlace = dir == folder || std::filesystem::equivalent(dir, folder, ec);
  if (o.device.empty())
    o.device = prepared->settings.device;

  ErrorOr<std::shared_ptr<runtime::Collectives>> joined =
      train::joinLaunchedJob(o.commTimeout);
  if (!joined)
    return joined.status();
  std::shared_ptr<runtime::Collectives> job = *joined;
  bool leader = !job || job->rank() == 0;
  if (job && !prepared->settings.dataParallel)
    return invalid("'" + folder +
                   "' was prepared for one process; prepare it with "
                   "--data-parallel to train as a job of " +
                   std::to_string(job->size()) + " ranks");
  if (!job && prepared->settings.dataParallel)
    return invalid("'" + folder +
                   "' was prepared for a data-parallel job; run it under "
                   "mpirun with two or more ranks");
  ErrorOr<std::string> device = train::rankDevice(o.device, job.get());
  if (!device)
    return device.status();
  // One rank reports; the others' output would repeat it.
  if (!leader && !std::freopen("/dev/null", "w", stdout))
    return Status::failure("cannot silence the output of rank " +
                               std::to_string(job->rank()),
                           ErrorCode::Io);
  for (const std::string &file : o.train)
    if (!std::filesystem::is_regular_file(file))
      return invalid("--train: '" + file + "' is not a readable file");
  for (const std::string &file : o.valid)
    if (!std::filesystem::is_regular_file(file))
      return invalid("--valid: '" + file + "' is not a readable file");
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir))
    return invalid("--out: '" + dir + "' is not a directory");
  LOOM_RETURN_IF_ERROR(train::cleanRunDirectory(dir));

  // The run's settings: the prepared program's, and on --resume the
  // checkpoint's, which must agree with them.
  train::RunSettings settings = prepared->settings.run;
  settings.seed = o.seed;
  std::optional<train::Checkpoint> checkpoint;
  if (o.resume) {
    ErrorOr<train::Checkpoint> latest = train::latestCheckpoint(dir);
    if (!latest)
      return latest.status();
    checkpoint = std::move(*latest);
    // The compiled settings count as given: a checkpoint of other batch
    // bounds cannot continue with this program.
    std::set<std::string> fixed = {"--max-tokens", "--max-sentences",
                                   "--warmup", "--lr-scale", "--clip-norm"};
    if (given.count("--seed"))
      fixed.insert("--seed");
    LOOM_RETURN_IF_ERROR(train::takeRecordedSettings(
        checkpoint->path, checkpoint->file.metadata, fixed, settings));
  } else {
    LOOM_RETURN_IF_ERROR(train::checkFreshRunDirectory(dir, inPlace));
  }

  int64_t maxLen = prepared->config.max_len();
  ErrorOr<train::RunCorpora> corpora =
      train::readRunCorpora(o.train, o.valid, prepared->tokenizer(), maxLen);
  if (!corpora)
    return corpora.status();
  ErrorOr<std::shared_ptr<runtime::Device>> opened =
      runtime::openDevice(*device, o.threads);
  if (!opened)
    return opened.status().withContext("--device " + *device);
  ErrorOr<std::shared_ptr<runtime::Collectives>> onDevice =
      train::jobOnDevice(job, *device, o.commTimeout);
  if (!onDevice)
    return onDevice.status();
  job = *onDevice;
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(prepared->trainProgram, *opened);
  if (!session)
    return session.status().withContext(prepared->trainPath);
  if (job)
    (*session)->setCollectives(job);
  // A new run elsewhere than the prepared folder gets the files that make
  // it a model directory (`loom translate --model DIR` reads them).
  if (!o.resume && !inPlace && leader)
    LOOM_RETURN_IF_ERROR(train::copyPreparedModel(*prepared, dir));
  if (leader) {
    std::filesystem::create_directories(dir + "/checkpoints", ec);
    if (ec)
      return Status::failure("cannot create '" + dir +
                                 "/checkpoints': " + ec.message(),
                             ErrorCode::Io);
  }
  std::printf("model: %lld parameters; %s; prepared in %s\n",
              (long long)prepared->trainProgram->parameterCount(),
              (*session)->device().description().c_str(), folder.c_str());

  train::Metadata run = train::runMetadata(
      settings, prepared->configText, prepared->tokenizer(), corpora->train);
  train::TrainPosition position;
  if (o.resume) {
    ErrorOr<train::TrainPosition> at =
        train::resumeRun(**session, *checkpoint, run, dir);
    if (!at)
      return at.status();
    position = *at;
  } else {
    LOOM_RETURN_IF_ERROR(runtime::initParameters(**session, settings.seed));
  }

  train::TrainerOptions trainer = trainerOptions(
      o, dir, settings, prepared->config.d_model(), maxLen, job.get());
  train::RunPresentation presentation;
  presentation.progressBar =
      o.progress == "bar" || (o.progress == "auto" && ::isatty(STDOUT_FILENO));
  presentation.command = "loom-train";
  if (!o.noPlot && corpora->valid) {
    std::string script = folder + "/loom-plot";
    if (::access(script.c_str(), X_OK) == 0)
      presentation.plotScript = script;
    else
      std::fprintf(stderr,
                   "loom-train: no loom-plot in '%s'; no curves are drawn in "
                   "this run\n",
                   folder.c_str());
  }
  int code =
      train::runObservedTraining(**session, trainer, position, *corpora,
                                 prepared->tokenizer(), run, presentation);
  if (job && (code == 0 || code == 130))
    LOOM_RETURN_IF_ERROR(train::leaveJob());
  return code;
}

} // namespace

int main(int argc, char **argv) {
  skipLibraryDestructorsOnExit();
  CLI::App app{"Train a Loom model with a folder `loom prepare` wrote, "
               "without the compiler"};
  Options o;
  addRunFlags(&app, o,
              "The run's directory (default: the prepared folder, where "
              "this binary sits)",
              "by default the device it was prepared for");
  app.add_option("--prepared", o.prepared,
                 "The prepared folder (default: the folder of this binary)");
  makeStrict(app, "loom-train");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return usageExit(app, e);
  }
  std::set<std::string> given;
  for (const char *flag : {"--seed"})
    if (app.count(flag))
      given.insert(flag);
  ErrorOr<int> code = trainPrepared(o, given);
  if (!code) {
    std::fflush(stdout);
    std::fprintf(stderr, "loom-train: error: %s\n", code.error().c_str());
    return 1;
  }
  return *code;
}
