//===- Trainer.h - Training a compiled model --------------------*- C++ -*-===//
//
// Runs a compiled @train_step over token-budget batches, epoch after epoch,
// with dropout seeded per step; as one rank of a data-parallel job, over
// its share of each batch. It checks the loss, validates and checkpoints,
// and tells observers what happened (TrainObserver): the console, the
// metrics file and the learning curves are observers, so the loop itself
// prints nothing. Where it stands (step, epoch, batch within the epoch,
// tokens so far) goes into every checkpoint, so a resumed run sees the same
// batches, the same dropout masks and the same optimizer state as one that
// was never stopped.
//
// It needs a session and the data, not the compiler: `loom train` compiles
// and then trains through it, and `loom-train` trains with an executable
// `loom prepare` compiled earlier.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_TRAINER_H
#define LOOM_API_TRAIN_TRAINER_H

#include "abi/Error.h"
#include "abi/LearningRate.h"
#include "api/train/Checkpoint.h"
#include "api/train/Validation.h"
#include "runtime/Collectives.h"
#include "runtime/Session.h"
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::train {

struct TrainerOptions {
  /// The run's directory: checkpoints/ and model.safetensors go there.
  /// Empty: the run writes nothing (a demonstration, a test); the session
  /// holds the parameters when it ends.
  std::string dir;
  uint64_t seed = 1;
  /// Padded tokens per side and sentences per batch.
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  /// Stop after this many steps or epochs (0: no limit from it).
  int64_t steps = 0;
  int64_t epochs = 0;
  /// Stop at the first step boundary after this many seconds of training in
  /// this process, validating and saving as at the end (0: no limit): a
  /// budget on a lent machine.
  double timeLimitSeconds = 0;
  /// Validate and checkpoint every N steps; 0: at the end of each epoch.
  int64_t validEvery = 0;
  /// A report every N steps (observers hear of every step; this marks the
  /// ones a log records).
  int64_t logEvery = 100;
  /// Step checkpoints kept besides the best one.
  int64_t keep = 5;
  /// The schedule compiled into @train_step, to report the learning rate.
  abi::LearningRateSchedule schedule;
  /// The longest sequence the model takes.
  int64_t maxLen = 256;
  /// The data-parallel job this process is a rank of, or null to train
  /// alone. Every rank draws the same global batches and runs its share of
  /// each; rank 0 alone validates, writes the directory and tells the
  /// observers.
  runtime::Collectives *job = nullptr;
};

/// Where training stands; saved in checkpoints as metadata.
struct TrainPosition {
  int64_t step = 0;  // steps done
  int64_t epoch = 1; // the epoch under way, from 1
  int64_t batch = 0; // batches of that epoch done
  int64_t tokens = 0;
  double seconds = 0; // time spent training and validating so far
  int64_t bestStep = 0;
  double bestBleu = -1;

  /// The epoch of the last batch run (the position is the next batch's).
  int64_t lastEpoch() const { return batch == 0 ? epoch - 1 : epoch; }

  void save(Metadata &metadata) const;
  static ErrorOr<TrainPosition> load(const Metadata &metadata);
};

struct TrainData {
  std::vector<std::vector<int64_t>> sources; // ids + eos
  std::vector<std::vector<int64_t>> targets; // bos + ids + eos
};

/// After each step: the window since the last logged report.
struct StepReport {
  int64_t step = 0;
  /// The steps the run will take (the limit, or the epochs at the size of
  /// this epoch), for a progress bar.
  int64_t totalSteps = 0;
  int64_t epoch = 1;
  /// Mean loss per target token, and tokens per second, over the window.
  double loss = 0;
  double tokensPerSecond = 0;
  double learningRate = 0;
  int64_t tokens = 0; // source and target tokens so far
  double elapsedSeconds = 0;
  double etaSeconds = 0;
  /// The job's ranks, and the share of the window this rank waited for
  /// the others.
  int ranks = 1;
  double waitShare = 0;
  /// Due for the log (every logEvery steps, before a validation, at the
  /// end); the window starts anew after it.
  bool logged = false;
};

struct ValidationReport {
  int64_t step = 0;
  int64_t epoch = 0;
  double nll = 0; // per target token
  double bleu = 0;
  bool best = false;
  double seconds = 0; // the validation's
  double elapsedSeconds = 0;
};

/// How a run ended without an error.
struct TrainEnd {
  /// The signal that stopped it (after a checkpoint), or 0 when it ran to
  /// its limit.
  int signal = 0;
  TrainPosition position;
  /// The checkpoint written last, or where the final parameters went.
  std::string saved;
};

/// What the trainer tells; rank 0 alone hears. Every method has a default
/// that ignores it.
class TrainObserver {
public:
  virtual ~TrainObserver();
  virtual void onStep(const StepReport &report);
  virtual void onValidation(const ValidationReport &report);
  virtual void onCheckpoint(int64_t step, const std::string &path);
  virtual void onEnd(const TrainEnd &end);
};

/// Asks a running trainer to stop at the next step boundary, after saving a
/// checkpoint, as if by `signal`: what a SIGINT or SIGTERM handler calls
/// (async-signal-safe).
void requestStop(int signal);

/// While alive, SIGINT and SIGTERM call requestStop; the previous handlers
/// come back after.
class StopOnSignals {
public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals &) = delete;
  StopOnSignals &operator=(const StopOnSignals &) = delete;

private:
  void (*previousInt)(int);
  void (*previousTerm)(int);
};

/// Trains until the step or epoch limit or a stop request; `runMetadata`
/// (config, seed, ...) goes into every checkpoint beside the position. A
/// validation set needs the tokenizer that detokenizes its translations;
/// without one, `tokenizer` may be null. A non-finite loss is an error that
/// saves nothing and names the last checkpoint.
ErrorOr<TrainEnd> train(runtime::Session &model, const TrainerOptions &options,
                        TrainPosition position, const TrainData &data,
                        const ValidationSet *valid,
                        const text::Tokenizer *tokenizer,
                        const Metadata &runMetadata,
                        const std::vector<TrainObserver *> &observers);

} // namespace loom::train

#endif // LOOM_API_TRAIN_TRAINER_H
