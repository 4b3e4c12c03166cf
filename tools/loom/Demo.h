//===- Demo.h - `loom demo` -------------------------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOM_DEMO_H
#define LOOM_TOOLS_LOOM_DEMO_H

#include <cstdint>
#include <string>

namespace loom {

struct DemoOptions {
  std::string task = "reverse"; // or "copy"
  int64_t steps = 1500;
  int64_t batch = 32;
  int64_t warmup = 100;
  double lrScale = 1.0;
  uint64_t seed = 1;
  int64_t heldOut = 200;
  // One thread: the tiny model's kernels are too small to split, and
  // OpenMP's spinning threads slow down badly on a busy machine.
  int threads = 1;
};

/// Trains the `tiny` Transformer on a synthetic task with the CPU backend,
/// printing progress, then decodes held-out examples greedily.
/// Returns the process exit code.
int runDemo(const DemoOptions &options);

} // namespace loom

#endif // LOOM_TOOLS_LOOM_DEMO_H
