//===- TrainingRun.h - A run's directory, data and resumption ---*- C++ -*-===//
//
// What `loom train` and `loom-train` do around the trainer, the same way:
// refusing a directory that holds another run, reading the corpora as the
// model takes them, recording in every checkpoint what makes the run the
// same run (settings, config, vocabulary, data), and resuming from the
// latest checkpoint only when all of that still holds. Nothing here
// compiles: the caller brings a session of a compiled @train_step.
//
// A run directory:
//
//   DIR/spm.model        the vocabulary (one joint SentencePiece model)
//   DIR/config.pbtxt     the model's config
//   DIR/checkpoints/     step-<step>.safetensors: parameters, Adam moments
//                        and where training stood; the last --keep and the
//                        best (by validation BLEU)
//   DIR/metrics.jsonl    one JSON object per report and per validation
//   DIR/model.safetensors  the parameters when training ends
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_TRAININGRUN_H
#define LOOM_API_TRAIN_TRAININGRUN_H

#include "api/train/Trainer.h"
#include "runtime/Safetensors.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loom::train {

/// The choices a run's checkpoints record. The data order follows from the
/// seed and the batch bounds, so a resumed run keeps them; the schedule may
/// change.
struct RunSettings {
  uint64_t seed = 1;
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  /// The training step's products: "fp32", or "bf16" (loom-mixed-precision).
  std::string precision = "fp32";
};

/// Takes from `metadata` (of the checkpoint at `path`) each setting whose
/// flag is not in `given` ("--seed", "--max-tokens", "--max-sentences",
/// "--warmup", "--lr-scale", "--clip-norm", "--precision"). A given value
/// that differs is refused for the seed, the batch bounds and the precision,
/// and noted on stdout for the schedule. A checkpoint from before runs
/// recorded their precision was trained in fp32.
Status takeRecordedSettings(const std::string &path, const Metadata &metadata,
                            const std::set<std::string> &given,
                            RunSettings &settings);

/// A new run starts in a directory with no checkpoints and no model files:
/// one that holds a model would lose its vocabulary, config and weights.
/// A folder `loom prepare` wrote (`prepared`) holds the config, the
/// vocabulary and the executables by design; its run's files must not be
/// there yet.
Status checkFreshRunDirectory(const std::string &dir, bool prepared = false);

/// A run's hold on its directory while it writes there: an advisory lock
/// (flock) on the directory itself, so that a second run into the same
/// directory is refused instead of mixing its files with this one's. A
/// directory the lock had to create is removed again when it is still
/// empty at release (a refused run leaves nothing behind).
class RunDirectoryLock {
public:
  static ErrorOr<RunDirectoryLock> acquire(const std::string &dir);
  RunDirectoryLock(RunDirectoryLock &&other) noexcept;
  RunDirectoryLock &operator=(RunDirectoryLock &&) = delete;
  ~RunDirectoryLock();

private:
  RunDirectoryLock() = default;
  int fd = -1;
  std::string dir;
  bool created = false;
};

/// Deletes the temporaries a crashed run left in DIR and DIR/checkpoints,
/// before anything new is written there.
Status cleanRunDirectory(const std::string &dir);

/// The vocabulary rank 0 of `job` holds in `tokenizer`, given to every
/// rank (a job's ranks train one vocabulary once); alone, as it is.
Status shareVocabulary(runtime::Collectives *job,
                       std::optional<text::Tokenizer> &tokenizer);

/// Writes a new run's directory: DIR/checkpoints/, the vocabulary and the
/// config (each file atomically). What the run's checkpoints hold comes
/// later, from the trainer.
Status writeRunDirectory(const std::string &dir,
                         const text::Tokenizer &tokenizer,
                         const std::string &configText);

/// The corpora as the model takes them: source ids + eos, target bos + ids
/// + eos, pairs longer than `maxLen` (with those) skipped. Prints a line of
/// counts for each ("train: 400 lines, ...").
struct RunCorpora {
  TrainData train;
  std::optional<ValidationSet> valid;
};
ErrorOr<RunCorpora> readRunCorpora(const std::vector<std::string> &train,
                                   const std::vector<std::string> &valid,
                                   const text::Tokenizer &tokenizer,
                                   int64_t maxLen);

/// What every checkpoint of the run records beside its position: the
/// settings, the config as text, checksums of the vocabulary and of the
/// training data's ids.
Metadata runMetadata(const RunSettings &settings, const std::string &configText,
                     const text::Tokenizer &tokenizer, const TrainData &data);

/// The directory's latest checkpoint, read; NotFound when there is none.
struct Checkpoint {
  std::string path;
  SafeTensorFile file;
};
ErrorOr<Checkpoint> latestCheckpoint(const std::string &dir);

/// Loads `checkpoint` into the session after checking that it belongs to
/// the run `run` describes (the same vocabulary, config and training
/// data), drops the metrics written after it and says on stdout where the
/// run resumes.
ErrorOr<TrainPosition> resumeRun(runtime::Session &session,
                                 const Checkpoint &checkpoint,
                                 const Metadata &run, const std::string &dir);

/// How a run shows itself: the console (a progress bar, or lines), the
/// metrics file, and the curves when there is a script to draw them.
struct RunPresentation {
  bool progressBar = false;
  /// loom-plot; empty: no curves.
  std::string plotScript;
  /// Prefixes messages: "loom train", "loom-train".
  std::string command = "loom train";
  /// Observers besides the console, the metrics file and the curves (the
  /// Python module's callback).
  std::vector<TrainObserver *> observers;
  /// Where given, a failure of training itself is kept here as well as
  /// printed.
  Status *failure = nullptr;
};

/// Trains with the console, DIR/metrics.jsonl and (with a plot script and a
/// validation set) DIR/curves.png observing, SIGINT and SIGTERM stopping it
/// at the next step after a checkpoint. The process's exit code: 0 when
/// done, 1 after printing the error, 130 when stopped.
int runObservedTraining(runtime::Session &session,
                        const TrainerOptions &options, TrainPosition position,
                        const RunCorpora &corpora,
                        const text::Tokenizer &tokenizer,
                        const Metadata &runMetadata,
                        const RunPresentation &presentation);

} // namespace loom::train

#endif // LOOM_API_TRAIN_TRAININGRUN_H
