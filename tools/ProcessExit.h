//===- ProcessExit.h - How Loom's command-line tools end --------*- C++ -*-===//
//
// OpenBLAS joins its worker threads in a library destructor. A worker that
// failed to allocate its buffer when memory ran out retries forever, so a
// process that had already printed its error (or its result) never exited.
// The tools have closed every file they wrote by the time main returns, so
// they flush the standard streams and leave without running library
// destructors. A library that ends the process itself goes the same way:
// GNU OpenMP calls exit(1) when it cannot start a thread (memory ran out),
// and the library destructors that exit() would run hang just the same.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_PROCESSEXIT_H
#define LOOM_TOOLS_PROCESSEXIT_H

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace loom {

[[noreturn]] inline int exitWithoutLibraryDestructors(int code) {
  std::cout.flush();
  std::cerr.flush();
  // A failed flush of stdout (a full disk, a closed pipe) loses output: say
  // so in the exit code.
  if (std::fflush(nullptr) != 0 && code == 0)
    code = 1;
  std::_Exit(code);
}

/// Makes every later exit(), the tools' own or a library's, leave like
/// exitWithoutLibraryDestructors. Called first thing in main.
inline void skipLibraryDestructorsOnExit() {
  on_exit([](int code, void *) { exitWithoutLibraryDestructors(code); },
          nullptr);
}

} // namespace loom

#endif // LOOM_TOOLS_PROCESSEXIT_H
