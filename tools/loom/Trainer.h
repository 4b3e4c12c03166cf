//===- Trainer.h - The training loop of `loom train` ------------*- C++ -*-===//
//
// Runs a compiled @train_step over token-budget batches, epoch after epoch,
// with dropout seeded per step; as one rank of a data-parallel job, over
// its share of each batch. It reports progress, writes metrics, checks
// the loss, validates and checkpoints. Where it stands (step, epoch, batch
// within the epoch, tokens so far) goes into every checkpoint, so a resumed
// run sees the same batches, the same dropout masks and the same optimizer
// state as one that was never stopped.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_TRAINER_H
#define LOOM_TOOLS_LOOM_TRAINER_H

#include "tools/loom/Checkpoint.h"
#include "tools/loom/Validation.h"

#include "passes/Pipeline.h"
#include "runtime/Session.h"
#include "text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cli {

/// The run's reports and validations, one JSON object per line, in DIR.
inline constexpr const char kMetricsFile[] = "metrics.jsonl";

struct TrainSettings {
  std::string dir;
  uint64_t seed = 1;
  /// Padded tokens per side and sentences per batch.
  int64_t maxTokens = 4096;
  int64_t maxSentences = 256;
  /// Stop after this many steps or epochs (0: no limit from it).
  int64_t steps = 0;
  int64_t epochs = 0;
  /// Validate and checkpoint every N steps; 0: at the end of each epoch.
  int64_t validEvery = 0;
  int64_t logEvery = 100;
  /// Step checkpoints kept besides the best one.
  int64_t keep = 5;
  /// The schedule compiled into @train_step, to report the learning rate.
  TrainingPipelineOptions schedule;
  /// Redraw one status line on a terminal instead of printing lines.
  bool progressBar = false;
  /// Redraw DIR/curves.png after each validation (Plot.h).
  bool plotCurves = true;
  /// The longest sequence the model takes.
  int64_t maxLen = 256;
  /// The data-parallel job this process is a rank of, or null to train
  /// alone. Every rank draws the same global batches and runs its share of
  /// each; rank 0 alone reports, validates and writes the directory.
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
  static llvm::Expected<TrainPosition> load(const Metadata &metadata);
};

struct TrainData {
  std::vector<std::vector<int64_t>> sources; // ids + eos
  std::vector<std::vector<int64_t>> targets; // bos + ids + eos
};

/// Drops the records of DIR/metrics.jsonl after `step`, atomically: a run
/// resumed from the checkpoint at `step` writes them again.
llvm::Error truncateMetrics(const std::string &dir, int64_t step);

/// Trains until the step or epoch limit; `runMetadata` (config, seed, ...)
/// goes into every checkpoint beside the position. Returns the process exit
/// code: 0 when done, 1 on an error or a non-finite loss, 130 when
/// interrupted (after saving a checkpoint).
int runTraining(runtime::Session &model, const TrainSettings &settings,
                TrainPosition position, const TrainData &train,
                const ValidationSet *valid, const text::Tokenizer &tokenizer,
                const Metadata &runMetadata);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_TRAINER_H
