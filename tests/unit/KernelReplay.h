//===- KernelReplay.h - A model's kernels alone on two devices --*- C++ -*-===//
//
// A StepHook on a reference session (the CPU) that replays each step, as
// soon as the reference has run it, on a second session of the same model
// compiled for the device under test: the step's arguments as they were
// before the reference ran it are copied to that device, its kernel runs
// there alone, and every argument is compared with what the reference left.
// A kernel is so checked on the values a real model gives it, free of what
// the kernels before it did on the device under test: a wrong kernel shows
// by its own name, step and worst element, not by a model's drift.
//
// Arguments that share memory in the reference's run (an in-place update,
// views of one buffer) share it in the replay too: each group of
// overlapping arguments is copied as one span.
//
// The two executables must be compiled from the same model by the same
// pipeline, for two targets, with the same layouts: the same steps over the
// same kernels, the generated ones named alike but for the target's prefix.
// (A CPU executable keeps the decoder's key caches position first, which
// the CUDA kernel does not read: `loom compile --cuda-layouts` writes one
// that runs a CUDA executable's steps.)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_KERNELREPLAY_H
#define LOOM_TESTS_UNIT_KERNELREPLAY_H

#include "runtime/Session.h"

#include <map>
#include <string>
#include <vector>

namespace loom::test {

/// How one kernel fared over its replays.
struct KernelVerdict {
  std::string kernel; // the reference's symbol
  int64_t replays = 0;
  /// The largest |got - want| / max(|want|, rms of the argument) over the
  /// float elements it wrote, scaled to the replay's tolerance where an
  /// argument has its own (setTolerance); integers must match exactly.
  double worst = 0;
  /// The first failure: entry, step, argument, element, values.
  std::string failure;
};

class KernelReplay : public runtime::StepHook {
public:
  /// Replays on `target` with tolerance `rtol` (see worst).
  KernelReplay(runtime::Session &reference, runtime::Session &target,
               double rtol);
  ~KernelReplay() override;

  /// Holds argument `arg` of library kernel `kernel` to `rtol` instead: for
  /// a result that is a difference of sums each device forms in its own
  /// order, whose rounding is relative to the sums, not to the difference.
  void setTolerance(const std::string &kernel, size_t arg, double rtol) {
    argTolerance[{kernel, arg}] = rtol;
  }

  Status beforeStep(const runtime::StepView &step) override;
  Status afterStep(const runtime::StepView &step) override;

  /// Per kernel of the reference's executable that ran, by symbol.
  const std::map<std::string, KernelVerdict> &verdicts() const {
    return byKernel;
  }
  /// The generated and library kernels of the reference's executable that
  /// no replayed step used.
  std::vector<std::string> kernelsNotReplayed() const;

private:
  struct Span {
    const char *begin = nullptr; // in the reference's memory
    size_t bytes = 0;
    std::vector<char> before; // its contents before the step
    void *onTarget = nullptr;
    size_t allocated = 0;
  };
  void releaseSpans();
  /// The index of the span holding argument `arg`.
  size_t spanOf(const runtime::TensorRef &arg) const;

  runtime::Session &reference, &target;
  double rtol;
  std::map<std::pair<std::string, size_t>, double> argTolerance;
  std::vector<Span> spans;
  std::map<std::string, KernelVerdict> byKernel;
};

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_KERNELREPLAY_H
