//===- TrainingJob.cpp - A whole training run, either way -----------------===//

#include "api/train/TrainingJob.h"

#include "api/train/Job.h"
#include "runtime/InputFile.h"
#include "runtime/Weights.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace loom::train {

namespace {

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

/// What every rank of a job must run the same: the run (settings, config,
/// vocabulary and training data, as checkpoints record it) and the options
/// that decide when the ranks step, validate, checkpoint and stop.
Metadata jobRecord(const Metadata &run, const JobOptions &o) {
  Metadata record = run;
  record["resume"] = o.resume ? "yes" : "no";
  record["steps"] = std::to_string(o.steps);
  record["epochs"] = std::to_string(o.epochs);
  record["time_limit"] = metadataNumber(o.timeLimitSeconds);
  record["valid_every"] = std::to_string(o.validEvery);
  record["keep"] = std::to_string(o.keep);
  record["valid"] = o.valid.empty() ? "none" : "given";
  return record;
}

/// Every rank compares its record with rank 0's; a rank that differs says
/// in what, and every rank fails together (one that went on would wait for
/// the others' first all-reduce until its timeout).
Status agreeAcrossRanks(runtime::Collectives &job, const Metadata &record) {
  std::string bytes;
  if (job.rank() == 0)
    for (const auto &[key, value] : record)
      bytes += std::to_string(key.size()) + ":" + key +
               std::to_string(value.size()) + ":" + value;
  LOOM_RETURN_IF_ERROR(job.broadcast(bytes, 0));
  Metadata leader;
  for (size_t at = 0; at < bytes.size();) {
    std::string parts[2];
    for (std::string &part : parts) {
      size_t colon = bytes.find(':', at);
      size_t length = std::stoul(bytes.substr(at, colon - at));
      part = bytes.substr(colon + 1, length);
      at = colon + 1 + length;
    }
    leader[parts[0]] = parts[1];
  }
  std::string difference;
  for (const auto &[key, value] : record) {
    auto it = leader.find(key);
    if (it == leader.end() || it->second != value) {
      std::string theirs = it == leader.end() ? "nothing" : it->second;
      auto shown = [](const std::string &text) {
        return text.size() > 40 ? "a different one" : "'" + text + "'";
      };
      difference = "rank " + std::to_string(job.rank()) + " runs with " + key +
                   " " + shown(value) + ", rank 0 with " + shown(theirs);
      break;
    }
  }
  std::vector<double> differing = {difference.empty() ? 0.0 : 1.0};
  LOOM_RETURN_IF_ERROR(job.allReduceHost(differing));
  if (!difference.empty())
    return invalid(difference +
                   ": every rank of a job must train the same run (seed, "
                   "settings, model, vocabulary, corpus and limits)");
  if (differing[0] > 0)
    return invalid(std::to_string(int(differing[0])) + " of the job's " +
                   std::to_string(job.size()) +
                   " ranks run other settings than rank 0 (each says which)");
  return Status::success();
}

} // namespace

ModelSource::~ModelSource() = default;

Status checkJobOptions(const JobOptions &o) {
  if (o.steps < 0 || o.epochs < 0 || o.validEvery < 0 || o.logEvery < 1 ||
      o.keep < 1)
    return invalid("--log-every and --keep must be positive; --steps, "
                   "--epochs and --valid-every must not be negative");
  if (o.steps == 0 && o.epochs == 0)
    return invalid("say how long to train: --steps N or --epochs N");
  if (!(o.timeLimitSeconds >= 0) || !std::isfinite(o.timeLimitSeconds))
    return invalid("--time-limit must be a number of seconds, 0 or more");
  if (o.train.size() != 2 || (!o.valid.empty() && o.valid.size() != 2))
    return invalid("--train and --valid each take two files: SRC TGT");
  for (const std::string &file : o.train)
    LOOM_RETURN_IF_ERROR(checkInputFile(file, "--train"));
  for (const std::string &file : o.valid)
    LOOM_RETURN_IF_ERROR(checkInputFile(file, "--valid"));
  if (o.dir.empty())
    return invalid("--out: the path is empty");
  std::error_code ec;
  if (std::filesystem::exists(o.dir, ec) &&
      !std::filesystem::is_directory(o.dir, ec))
    return invalid("--out: '" + o.dir + "' exists and is not a directory");
  return Status::success();
}

ErrorOr<int> runTrainingJob(JobOptions o, ModelSource &source) {
  LOOM_RETURN_IF_ERROR(checkJobOptions(o));
  if (o.device.empty())
    o.device = source.defaultDevice();
  // Under an MPI launcher (mpirun, srun) this process is one rank of a
  // data-parallel job.
  ErrorOr<std::shared_ptr<runtime::Collectives>> joined =
      joinLaunchedJob(o.commTimeoutSeconds);
  if (!joined)
    return joined.status();
  std::shared_ptr<runtime::Collectives> job = *joined;
  bool leader = !job || job->rank() == 0;
  LOOM_RETURN_IF_ERROR(source.checkJob(job.get()));
  ErrorOr<std::string> device = rankDevice(o.device, job.get());
  if (!device)
    return device.status();
  // One rank reports; the others' output would repeat it.
  if (!leader && !std::freopen("/dev/null", "w", stdout))
    return Status::failure("cannot silence the output of rank " +
                               std::to_string(job->rank()),
                           ErrorCode::Io);
  // Rank 0 writes the directory; while it lives nothing else may.
  std::optional<RunDirectoryLock> lock;
  if (leader) {
    ErrorOr<RunDirectoryLock> held = RunDirectoryLock::acquire(o.dir);
    if (!held)
      return held.status();
    lock.emplace(std::move(*held));
  }
  LOOM_RETURN_IF_ERROR(cleanRunDirectory(o.dir));

  // The run's settings: as given, and on --resume the checkpoint's for
  // those not given; the compiled ones must agree with it either way.
  RunSettings settings = o.settings;
  std::optional<Checkpoint> checkpoint;
  if (o.resume) {
    ErrorOr<Checkpoint> latest = latestCheckpoint(o.dir);
    if (!latest)
      return latest.status();
    checkpoint = std::move(*latest);
    std::set<std::string> fixed = o.givenSettings;
    for (const std::string &flag : source.compiledSettings())
      fixed.insert(flag);
    LOOM_RETURN_IF_ERROR(takeRecordedSettings(
        checkpoint->path, checkpoint->file.metadata, fixed, settings));
  } else {
    LOOM_RETURN_IF_ERROR(checkFreshRunDirectory(o.dir, source.isHome(o.dir)));
  }
  LOOM_RETURN_IF_ERROR(source.open(o.dir, o.resume, settings, job.get()));
  const TransformerConfig &config = source.config();
  const text::Tokenizer &tokenizer = source.tokenizer();
  if (config.src_vocab() < tokenizer.vocabSize() ||
      config.tgt_vocab() < tokenizer.vocabSize())
    return invalid("the vocabulary has " +
                   std::to_string(tokenizer.vocabSize()) +
                   " pieces but the config's src_vocab is " +
                   std::to_string(config.src_vocab()) + " and tgt_vocab " +
                   std::to_string(config.tgt_vocab()));
  int64_t maxLen = config.max_len();
  if (settings.maxTokens < maxLen)
    return invalid("--max-tokens " + std::to_string(settings.maxTokens) +
                   " is less than the model's max_len " +
                   std::to_string(maxLen) +
                   ": a batch must fit the longest sentence");
  ErrorOr<RunCorpora> corpora =
      readRunCorpora(o.train, o.valid, tokenizer, maxLen);
  if (!corpora)
    return corpora.status();
  // What every checkpoint of this run records beside its position.
  Metadata run =
      runMetadata(settings, source.configText(), tokenizer, corpora->train);
  if (job)
    LOOM_RETURN_IF_ERROR(agreeAcrossRanks(*job, jobRecord(run, o)));

  ErrorOr<std::shared_ptr<runtime::Device>> opened =
      runtime::openDevice(*device, o.threads);
  if (!opened)
    return opened.status().withContext("--device " + *device);
  ErrorOr<std::shared_ptr<runtime::Collectives>> onDevice =
      jobOnDevice(job, *device, o.commTimeoutSeconds);
  if (!onDevice)
    return onDevice.status();
  job = *onDevice;
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      source.session(settings, *opened, job != nullptr);
  if (!session)
    return session.status();
  if (job)
    (*session)->setCollectives(job);
  // Only now, with the data read and the model at hand, does the run write
  // its directory: a run refused above leaves nothing behind. Rank 0 writes
  // it for the job.
  if (leader) {
    LOOM_RETURN_IF_ERROR(source.writeModelFiles(o.dir, !o.resume));
    std::error_code ec;
    std::filesystem::create_directories(o.dir + "/checkpoints", ec);
    if (ec)
      return Status::failure("cannot create '" + o.dir +
                                 "/checkpoints': " + ec.message(),
                             ErrorCode::Io);
  }
  std::printf("%s\n", source.describe(**session, job.get()).c_str());

  TrainPosition position;
  if (o.resume) {
    ErrorOr<TrainPosition> at = resumeRun(**session, *checkpoint, run, o.dir);
    if (!at)
      return at.status();
    position = *at;
  } else {
    LOOM_RETURN_IF_ERROR(runtime::initParameters(**session, settings.seed));
  }

  TrainerOptions trainer;
  trainer.dir = o.dir;
  trainer.seed = settings.seed;
  trainer.maxTokens = settings.maxTokens;
  trainer.maxSentences = settings.maxSentences;
  trainer.steps = o.steps;
  trainer.epochs = o.epochs;
  trainer.timeLimitSeconds = o.timeLimitSeconds;
  trainer.validEvery = o.validEvery;
  trainer.logEvery = o.logEvery;
  trainer.keep = o.keep;
  trainer.schedule = {config.d_model(), settings.warmup, settings.lrScale};
  trainer.maxLen = maxLen;
  trainer.job = job.get();
  RunPresentation presentation;
  presentation.progressBar = o.progressBar;
  presentation.command = o.command;
  presentation.observers = o.observers;
  presentation.failure = o.failure;
  if (o.drawCurves && corpora->valid) {
    presentation.plotScript = source.plotScript();
    if (presentation.plotScript.empty())
      std::fprintf(stderr,
                   "%s: no loom-plot at hand; no curves are drawn in "
                   "this run\n",
                   o.command.c_str());
  }
  int code = runObservedTraining(**session, trainer, position, *corpora,
                                 tokenizer, run, presentation);
  // A job's ranks leave together when they all finished (an MPI job whose
  // rank exits without saying so is torn down as failed); a rank that
  // failed exits at once, and the launcher ends the others.
  if (job && (code == 0 || code == 130))
    LOOM_RETURN_IF_ERROR(leaveJob());
  return code;
}

} // namespace loom::train
