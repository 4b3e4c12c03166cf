//===- LearningRate.h - The warm-up schedule of training --------*- C++ -*-===//
//
// "Attention Is All You Need"'s schedule, with a scale:
//
//   lr(t) = lr_scale * d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)
//
// for step t from 1. Written once, here: loom-optimizer compiles it into
// @train_step from scale() and rampSlope(), and whoever reports the rate a
// step used (the trainer's log and metrics) calls at().
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_LEARNINGRATE_H
#define LOOM_ABI_LEARNINGRATE_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace loom::abi {

struct LearningRateSchedule {
  int64_t dModel = 512;
  int64_t warmup = 4000;
  double lrScale = 1.0;

  /// lr_scale * d_model^-0.5: the rate's factor after the minimum.
  double scale() const {
    return lrScale / std::sqrt(static_cast<double>(dModel));
  }
  /// warmup^-1.5: the warm-up ramp's slope per step.
  double rampSlope() const {
    return std::pow(static_cast<double>(warmup), -1.5);
  }
  /// The rate at step `step` (from 1).
  double at(int64_t step) const {
    double t = static_cast<double>(step);
    return scale() * std::min(1.0 / std::sqrt(t), t * rampSlope());
  }
};

} // namespace loom::abi

#endif // LOOM_ABI_LEARNINGRATE_H
