//===- Plot.cpp - `loom plot` and the curves `loom train` draws -----------===//
//
// The drawing is matplotlib's (tools/loom/loom-plot.py, copied beside the
// binary as `loom-plot`); this file finds the script, runs it as a child and
// reads its exit status. `loom plot RUN... -o curves.png` passes its
// arguments through, so the script's own usage and errors are the command's.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Plot.h"
#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A child's exit code from its wait status; 128 + N for signal N.
int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127;
}

} // namespace

llvm::Expected<pid_t> spawnPlot(const std::vector<std::string> &args,
                                bool ownProcessGroup) {
  auto script = programBesideLoom("loom-plot");
  if (!script)
    return script.takeError();
  std::vector<std::string> argv;
  const char *python = std::getenv("LOOM_PYTHON");
  if (python && *python)
    argv.push_back(python);
  argv.push_back(*script);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char *> cargv;
  for (std::string &arg : argv)
    cargv.push_back(arg.data());
  cargv.push_back(nullptr);
  posix_spawnattr_t attributes;
  ::posix_spawnattr_init(&attributes);
  if (ownProcessGroup) {
    ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    ::posix_spawnattr_setpgroup(&attributes, 0);
  }
  pid_t child;
  // posix_spawnp: $LOOM_PYTHON may be a name on PATH.
  int rc = ::posix_spawnp(&child, cargv[0], nullptr, &attributes, cargv.data(),
                          environ);
  ::posix_spawnattr_destroy(&attributes);
  if (rc != 0)
    return error("cannot run '" + argv[0] + "': " + std::strerror(rc) +
                 (python ? ""
                         : " (the script runs with /usr/bin/python3; "
                           "set LOOM_PYTHON to another Python 3 with "
                           "matplotlib)"));
  return child;
}

int waitPlot(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  return exitCodeOf(status);
}

CurvePlotter::~CurvePlotter() { reap(/*block=*/true); }

bool CurvePlotter::reap(bool block) {
  if (running < 0)
    return true;
  int code;
  if (block) {
    code = waitPlot(running);
  } else {
    int status = 0;
    pid_t done = ::waitpid(running, &status, WNOHANG);
    if (done == 0)
      return false;
    code = done < 0 ? 127 : exitCodeOf(status);
  }
  running = -1;
  if (code != 0) {
    // The script said why on stderr; training goes on without curves.
    std::fprintf(stderr,
                 "loom train: drawing %s/%s failed (exit %d); no more "
                 "curves are drawn in this run (`loom plot %s -o FILE` draws "
                 "them later)\n",
                 dir.c_str(), kCurvesFile, code, dir.c_str());
    enabled = false;
  }
  return true;
}

void CurvePlotter::update() {
  if (!enabled)
    return;
  if (!reap(/*block=*/false)) {
    pending = true;
    return;
  }
  pending = false;
  // In its own process group: Ctrl-C at the terminal stops training (which
  // then saves a checkpoint and waits for this redraw), not the redraw.
  auto child = spawnPlot({dir, "-o", dir + "/" + kCurvesFile},
                         /*ownProcessGroup=*/true);
  if (!child) {
    std::fprintf(stderr, "loom train: %s; no curves are drawn in this run\n",
                 llvm::toString(child.takeError()).c_str());
    enabled = false;
    return;
  }
  running = *child;
}

void CurvePlotter::finish() {
  if (!enabled)
    return;
  reap(/*block=*/true);
  if (!enabled)
    return;
  if (pending) { // the last metrics were not drawn yet
    update();
    reap(/*block=*/true);
  }
  if (enabled)
    std::printf("learning curves: %s/%s\n", dir.c_str(), kCurvesFile);
}

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
    auto child = spawnPlot(cmd->remaining(), /*ownProcessGroup=*/false);
    if (!child) {
      std::fprintf(stderr, "loom plot: %s\n",
                   llvm::toString(child.takeError()).c_str());
      exitCode = 1;
      return;
    }
    exitCode = waitPlot(*child);
  });
}

} // namespace loom::cli
