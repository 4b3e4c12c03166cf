//===- TrainingJob.h - A whole training run, either way ---------*- C++ -*-===//
//
// `loom train` and `loom-train` run the same job: join the launched ranks,
// take the model (new, or resumed from the directory's latest checkpoint),
// read the corpora, open a session of @train_step, write the directory,
// draw or load the state and train with the console, the metrics file and
// the curves observing. They differ only in where the model comes from,
// which a ModelSource says: `loom train` trains a vocabulary and compiles
// (tools/loom/TrainingProgram.h); `loom-train` reads what `loom prepare`
// compiled earlier (PreparedSource, Prepared.h). So for the same seed,
// threads and data the two give the same run, bit for bit, and either
// resumes the other's.
//
// Nothing is written before everything that could refuse the run has been
// checked (the corpora read, the model compiled or loaded, a resumed run's
// checkpoint matched): an existing directory is never damaged by a refused
// run.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_TRAININGJOB_H
#define LOOM_API_TRAIN_TRAININGJOB_H

#include "api/train/TrainingRun.h"
#include "runtime/Device.h"
#include "runtime/config.pb.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace loom::train {

/// What the job is asked, by the options that do not change the compiled
/// program.
struct JobOptions {
  std::vector<std::string> train; // SRC TGT
  std::vector<std::string> valid; // SRC TGT, or none
  std::string dir;
  bool resume = false;
  int64_t steps = 0, epochs = 0;
  double timeLimitSeconds = 0;
  int threads = 0;
  /// cpu, cuda, cuda:N; empty: the source's default.
  std::string device;
  int64_t validEvery = 0, logEvery = 100, keep = 5;
  bool progressBar = false;
  bool drawCurves = true;
  double commTimeoutSeconds = 600;
  /// The run's settings, as given (RunSettings' defaults where not), and
  /// the flags that gave them: on --resume, the others come from the
  /// checkpoint.
  RunSettings settings;
  std::set<std::string> givenSettings;
  /// Prefixes messages: "loom train", "loom-train".
  std::string command;
  /// RunPresentation's: observers of the caller's own, and where a failure
  /// of training itself is kept.
  std::vector<TrainObserver *> observers;
  Status *failure = nullptr;
};

/// Checks what the job cannot start without: the limits, the files, the
/// directory's path. InvalidArgument, naming the flag.
Status checkJobOptions(const JobOptions &options);

/// Where the model of a run comes from. The job calls, in order: checkJob,
/// open, session, writeModelFiles, describe.
class ModelSource {
public:
  virtual ~ModelSource();
  /// --device when it is not given.
  virtual std::string defaultDevice() const = 0;
  /// The settings compiled into the program already: a resumed run must
  /// match its checkpoint in these, whether given or not.
  virtual std::set<std::string> compiledSettings() const = 0;
  /// Refuses a job the program was not compiled for (one process, or a
  /// data-parallel job).
  virtual Status checkJob(const runtime::Collectives *job) const = 0;
  /// Whether a new run in `dir` goes where the model's files are already
  /// (a prepared folder trains in place).
  virtual bool isHome(const std::string &dir) const = 0;
  /// Takes the model: on --resume, the run directory's (`resumed`);
  /// otherwise a new one for `settings`, the same on every rank of `job`.
  virtual Status open(const std::string &dir, bool resumed,
                      const RunSettings &settings,
                      runtime::Collectives *job) = 0;
  virtual const TransformerConfig &config() const = 0;
  /// The config as checkpoints and executables record it.
  virtual const std::string &configText() const = 0;
  virtual const text::Tokenizer &tokenizer() const = 0;
  /// A session of @train_step for `settings` on `device`, as a rank of a
  /// data-parallel job or alone.
  virtual ErrorOr<std::unique_ptr<runtime::Session>>
  session(const RunSettings &settings, std::shared_ptr<runtime::Device> device,
          bool dataParallel) = 0;
  /// Writes what makes `dir` a model directory besides the run's own files
  /// (rank 0 only, once nothing can refuse the run): a new run's config
  /// and vocabulary, the translate executable.
  virtual Status writeModelFiles(const std::string &dir, bool newRun) = 0;
  /// The line that introduces the run: the model and where it trains.
  virtual std::string describe(runtime::Session &session,
                               const runtime::Collectives *job) const = 0;
  /// loom-plot, which draws DIR/curves.png; empty when there is none.
  virtual std::string plotScript() const = 0;
};

/// Runs the job: the process's exit code (0 done, 130 stopped by a
/// signal after a checkpoint, 1 when training failed after saying why), or
/// the error that refused the run before it trained.
ErrorOr<int> runTrainingJob(JobOptions options, ModelSource &source);

} // namespace loom::train

#endif // LOOM_API_TRAIN_TRAININGJOB_H
