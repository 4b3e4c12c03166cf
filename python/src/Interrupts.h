//===- Interrupts.h - Ctrl-C during a long call -----------------*- C++ -*-===//
//
// Python notes SIGINT in its handler and raises KeyboardInterrupt when the
// interpreter next runs, which a call that translates or trains without the
// GIL would delay until it ended. While an InterruptWatch is alive, SIGINT
// is also counted where the call can see it: translation stops before its
// next batch (Translator::translate's beforeBatch). Python's own handler
// still gets the signal, so KeyboardInterrupt is raised as the call
// returns. Watches nest and overlap across threads; the first installs the
// handler and the last puts Python's back.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PYTHON_INTERRUPTS_H
#define LOOM_PYTHON_INTERRUPTS_H

#include "abi/Error.h"

#include <cstdint>

namespace loom::python {

class InterruptWatch {
public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch &) = delete;
  InterruptWatch &operator=(const InterruptWatch &) = delete;

  /// Whether SIGINT arrived since this watch began. Thread-safe.
  bool interrupted() const;
  /// A failure saying so once it did: what beforeBatch returns.
  Status check() const;

private:
  uint64_t startCount;
};

/// Raises KeyboardInterrupt (Python's, once its handler ran, or a new one)
/// when `watch` saw SIGINT; nothing otherwise. The GIL must be held.
void raiseIfInterrupted(const InterruptWatch &watch);

} // namespace loom::python

#endif // LOOM_PYTHON_INTERRUPTS_H
