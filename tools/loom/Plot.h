//===- Plot.h - Learning curves as PNG --------------------------*- C++ -*-===//
//
// The curves are drawn by `loom-plot` (a matplotlib script installed beside
// the `loom` binary), run as a child process: `loom plot` for the command
// line, and `CurvePlotter` while `loom train` runs. Drawing never stops
// training: a plot that fails is reported once and plotting turns off.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_PLOT_H
#define LOOM_TOOLS_LOOM_PLOT_H

#include "llvm/Support/Error.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace loom::cli {

/// The file `loom train` draws beside metrics.jsonl.
inline constexpr const char kCurvesFile[] = "curves.png";

/// Starts `loom-plot ARGS...` without waiting for it. The interpreter is
/// $LOOM_PYTHON when set (matplotlib must import there), else the script's
/// own (Debian's python3). With `ownProcessGroup`, a signal from the
/// terminal (Ctrl-C) does not reach the child.
llvm::Expected<pid_t> spawnPlot(const std::vector<std::string> &args,
                                bool ownProcessGroup);

/// Waits for a child from spawnPlot; its exit status (128 + N for signal N).
int waitPlot(pid_t child);

/// Redraws DIR/curves.png from DIR/metrics.jsonl after each validation, in
/// the background so training goes on meanwhile. A redraw asked for while
/// the previous one still runs waits for the next (or `finish`).
class CurvePlotter {
public:
  explicit CurvePlotter(std::string dir, bool enabled = true)
      : dir(std::move(dir)), enabled(enabled) {}
  ~CurvePlotter();

  /// Redraws when no redraw is running.
  void update();
  /// Waits for the running redraw, then draws the final curves; prints
  /// where they are.
  void finish();

private:
  /// Collects a finished redraw (all of them with `block`); false when one
  /// still runs.
  bool reap(bool block);

  std::string dir;
  bool enabled;
  pid_t running = -1;
  bool pending = false;
};

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_PLOT_H
