//===- Curves.h - Learning curves as PNG ------------------------*- C++ -*-===//
//
// The curves are drawn by `loom-plot` (a matplotlib script installed beside
// the `loom` and `loom-train` binaries), run as a child process: `loom plot`
// for the command line, and CurvesObserver while a run trains. Drawing never
// stops training: a plot that fails is reported once and plotting turns off.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_CURVES_H
#define LOOM_API_TRAIN_CURVES_H

#include "api/train/Trainer.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace loom::train {

/// The file a run draws beside metrics.jsonl.
inline constexpr const char kCurvesFile[] = "curves.png";

/// Starts `script ARGS...` without waiting for it. The interpreter is
/// $LOOM_PYTHON when set (matplotlib must import there), else the script's
/// own (Debian's python3). With `ownProcessGroup`, a signal from the
/// terminal (Ctrl-C) does not reach the child.
ErrorOr<pid_t> spawnPlot(const std::string &script,
                         const std::vector<std::string> &args,
                         bool ownProcessGroup);

/// Waits for a child from spawnPlot; its exit status (128 + N for signal N).
int waitPlot(pid_t child);

/// Redraws DIR/curves.png from DIR/metrics.jsonl after each validation, in
/// the background so training goes on meanwhile. A redraw asked for while
/// the previous one still runs waits for the next (or the end). `command`
/// ("loom train") prefixes its notices on stderr.
class CurvesObserver : public TrainObserver {
public:
  CurvesObserver(std::string dir, std::string script, std::string command);
  ~CurvesObserver() override;

  void onValidation(const ValidationReport &report) override;
  /// Waits for the running redraw, then draws the final curves; prints
  /// where they are.
  void onEnd(const TrainEnd &end) override;

private:
  /// Redraws when no redraw is running.
  void update();
  /// Collects a finished redraw (all of them with `block`); false when one
  /// still runs.
  bool reap(bool block);

  std::string dir, script, command;
  bool enabled = true;
  pid_t running = -1;
  bool pending = false;
};

} // namespace loom::train

#endif // LOOM_API_TRAIN_CURVES_H
