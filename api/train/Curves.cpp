//===- Curves.cpp - Learning curves as PNG --------------------------------===//

#include "api/train/Curves.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace loom::train {

namespace {

/// A child's exit code from its wait status; 128 + N for signal N.
int exitCodeOf(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127;
}

} // namespace

ErrorOr<pid_t> spawnPlot(const std::string &script,
                         const std::vector<std::string> &args,
                         bool ownProcessGroup) {
  std::vector<std::string> argv;
  const char *python = std::getenv("LOOM_PYTHON");
  if (python && *python)
    argv.push_back(python);
  argv.push_back(script);
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
    return Status::failure("cannot run '" + argv[0] +
                               "': " + std::strerror(rc) +
                               (python ? ""
                                       : " (the script runs with "
                                         "/usr/bin/python3; set LOOM_PYTHON "
                                         "to another Python 3 with "
                                         "matplotlib)"),
                           ErrorCode::NotFound);
  return child;
}

int waitPlot(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  return exitCodeOf(status);
}

CurvesObserver::CurvesObserver(std::string dir, std::string script,
                               std::string command)
    : dir(std::move(dir)), script(std::move(script)),
      command(std::move(command)) {}

CurvesObserver::~CurvesObserver() { reap(/*block=*/true); }

bool CurvesObserver::reap(bool block) {
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
                 "%s: drawing %s/%s failed (exit %d); no more curves are "
                 "drawn in this run (`loom plot %s -o FILE` draws them "
                 "later)\n",
                 command.c_str(), dir.c_str(), kCurvesFile, code, dir.c_str());
    enabled = false;
  }
  return true;
}

void CurvesObserver::onValidation(const ValidationReport &) { update(); }

void CurvesObserver::update() {
  if (!enabled)
    return;
  if (!reap(/*block=*/false)) {
    pending = true;
    return;
  }
  pending = false;
  // In its own process group: Ctrl-C at the terminal stops training (which
  // then saves a checkpoint and waits for this redraw), not the redraw.
  ErrorOr<pid_t> child = spawnPlot(script, {dir, "-o", dir + "/" + kCurvesFile},
                                   /*ownProcessGroup=*/true);
  if (!child) {
    std::fprintf(stderr, "%s: %s; no curves are drawn in this run\n",
                 command.c_str(), child.error().c_str());
    enabled = false;
    return;
  }
  running = *child;
}

void CurvesObserver::onEnd(const TrainEnd &) {
  if (!enabled || (running < 0 && !pending))
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

} // namespace loom::train
