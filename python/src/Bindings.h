//===- Bindings.h - The parts of the loom._runtime module -------*- C++ -*-===//
//
// Each file binds one part of the runtime: programs and sessions, the
// translator, training. What they share is here: the handles Python holds,
// and withoutGil, which every call that decodes, trains or runs a session
// goes through so that other Python threads run meanwhile.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_BINDINGS_H
#define LOOM_PYTHON_BINDINGS_H

#include "api/Translator.h"
#include "runtime/Program.h"
#include "runtime/Session.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>

namespace loom::python {

/// Runs `work` with the GIL released (and, with `lock`, holding it), and
/// returns its result once the GIL is held again. `work` must not touch
/// Python objects. The lock is let go before the GIL is taken back: a thread
/// waiting for the lock with the GIL held would otherwise never get it.
template <typename Work> auto withoutGil(Work &&work) {
  pybind11::gil_scoped_release released;
  return work();
}
template <typename Work> auto withoutGil(std::mutex &lock, Work &&work) {
  pybind11::gil_scoped_release released;
  std::lock_guard<std::mutex> held(lock);
  return work();
}

/// loom.Program: a validated executable.
struct ProgramHandle {
  explicit ProgramHandle(std::shared_ptr<const runtime::Program> program);
  std::shared_ptr<const runtime::Program> program;
};

/// loom.Session: a program on a device. `calls` makes its calls one at a
/// time.
struct SessionHandle {
  SessionHandle(std::shared_ptr<const runtime::Program> program,
                const std::string &device, int threads);
  pybind11::dict run(const std::string &entry, pybind11::kwargs inputs);

  std::shared_ptr<const runtime::Program> program;
  std::shared_ptr<runtime::Device> device;
  std::unique_ptr<runtime::Session> session;
  std::mutex calls;
};

/// Session.state.
struct StateView {
  std::shared_ptr<SessionHandle> session;
};

/// loom.Translator.
struct TranslatorHandle {
  std::unique_ptr<Translator> translator;
};

void bindSessions(pybind11::module_ &m);
void bindTranslator(pybind11::module_ &m);
void bindTraining(pybind11::module_ &m);
void bindCompiler(pybind11::module_ &m);

} // namespace loom::python

#endif // LOOM_PYTHON_BINDINGS_H
