//===- Interrupts.cpp - Ctrl-C during a long call -------------------------===//

#include "python/src/Interrupts.h"

#include <pybind11/pybind11.h>

#include <atomic>
#include <csignal>
#include <mutex>

namespace loom::python {

namespace {

std::atomic<uint64_t> interrupts{0};
std::mutex watchesLock;
int watches = 0;
struct sigaction previous;

void onInterrupt(int signal, siginfo_t *info, void *context) {
  interrupts.fetch_add(1, std::memory_order_relaxed);
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction)
      previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
  }
}

} // namespace

InterruptWatch::InterruptWatch() {
  std::lock_guard<std::mutex> lock(watchesLock);
  startCount = interrupts.load();
  if (watches++ > 0)
    return;
  struct sigaction ours = {};
  ours.sa_sigaction = onInterrupt;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGINT, &ours, &previous);
}

InterruptWatch::~InterruptWatch() {
  std::lock_guard<std::mutex> lock(watchesLock);
  if (--watches == 0)
    sigaction(SIGINT, &previous, nullptr);
}

bool InterruptWatch::interrupted() const {
  return interrupts.load(std::memory_order_relaxed) != startCount;
}

Status InterruptWatch::check() const {
  if (interrupted())
    return Status::failure("interrupted", ErrorCode::InvalidArgument);
  return Status::success();
}

void raiseIfInterrupted(const InterruptWatch &watch) {
  if (!watch.interrupted())
    return;
  if (PyErr_CheckSignals() != 0)
    throw pybind11::error_already_set();
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw pybind11::error_already_set();
}

} // namespace loom::python
