//===- Plot.cpp - `loom plot` ---------------------------------------------===//
//
// The drawing is matplotlib's (tools/loom/loom-plot.py, copied beside the
// binary as `loom-plot`, run by api/train/Curves.h); `loom plot RUN... -o
// curves.png` passes its arguments through, so the script's own usage and
// errors are the command's.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "api/train/Curves.h"

#include <cstdio>

namespace loom::cli {

void addPlotCommand(CLI::App &app, int &exitCode) {
  CLI::App *cmd = app.add_subcommand(
      "plot", "Learning curves of `loom train` runs, overlaid, as a PNG: "
              "loom plot RUN [RUN...] -o curves.png [--label NAME ...] "
              "[--title TEXT]");
  // The script parses the arguments; its usage and errors are this
  // command's.
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([cmd, &exitCode] {
    auto script = programBesideLoom("loom-plot");
    if (!script) {
      std::fprintf(stderr, "loom plot: %s\n",
                   llvm::toString(script.takeError()).c_str());
      exitCode = 1;
      return;
    }
    ErrorOr<pid_t> child =
        train::spawnPlot(*script, cmd->remaining(), /*ownProcessGroup=*/false);
    if (!child) {
      std::fprintf(stderr, "loom plot: %s\n", child.error().c_str());
      exitCode = 1;
      return;
    }
    exitCode = train::waitPlot(*child);
  });
}

} // namespace loom::cli
