//===- Observers.h - What a training run tells its user ---------*- C++ -*-===//
//
// The console (a redrawn progress bar on a terminal, else lines) and the
// metrics file (DIR/metrics.jsonl, one JSON object per logged report and
// per validation, which `loom plot` and the curves read) observe a run;
// `loom train` and `loom-train` attach both, and the curves (Curves.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_OBSERVERS_H
#define LOOM_API_TRAIN_OBSERVERS_H

#include "api/train/Trainer.h"

#include <chrono>
#include <cstdio>
#include <string>

namespace loom::train {

/// The run's reports and validations, one JSON object per line, in DIR.
inline constexpr const char kMetricsFile[] = "metrics.jsonl";

/// Progress and results on stdout.
class ConsoleObserver : public TrainObserver {
public:
  /// `bar`: one status line redrawn (at most five times a second), kept at
  /// each logged report; else a line per logged report. `dir` is the run's,
  /// for the closing lines.
  ConsoleObserver(bool bar, std::string dir) : bar(bar), dir(std::move(dir)) {}

  void onStep(const StepReport &report) override;
  void onValidation(const ValidationReport &report) override;
  void onEnd(const TrainEnd &end) override;

private:
  bool bar;
  std::string dir;
  std::chrono::steady_clock::time_point lastDraw;
};

/// A logged report and a validation as their lines of DIR/metrics.jsonl
/// (one JSON object each): what the Python module's callback gets too.
std::string metricsRecord(const StepReport &report);
std::string metricsRecord(const ValidationReport &report);

/// Appends the logged reports and the validations to DIR/metrics.jsonl.
class MetricsObserver : public TrainObserver {
public:
  explicit MetricsObserver(std::string dir) : dir(std::move(dir)) {}

  void onStep(const StepReport &report) override;
  void onValidation(const ValidationReport &report) override;

private:
  void append(const std::string &line);
  std::string dir;
};

/// Drops the records of DIR/metrics.jsonl after `step`, atomically: a run
/// resumed from the checkpoint at `step` writes them again.
Status truncateMetrics(const std::string &dir, int64_t step);

} // namespace loom::train

#endif // LOOM_API_TRAIN_OBSERVERS_H
