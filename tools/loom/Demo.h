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
};

/// Trains the `tiny` Transformer on a synthetic task with the reference
/// interpreter, printing progress, then decodes held-out examples greedily.
/// Returns the process exit code.
int runDemo(const DemoOptions &options);

} // namespace loom

#endif // LOOM_TOOLS_LOOM_DEMO_H
