//===- Average.h - Averaging a run's last checkpoints -----------*- C++ -*-===//
//
// The usual last step of training a translator (Vaswani et al. average the
// last 5 or 20 checkpoints): the element-wise mean of the parameters of a
// run's latest checkpoints. Their Adam moments are left out, so the result
// is a weights file (what `loom translate --model DIR` reads), never taken
// for a checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_AVERAGE_H
#define LOOM_API_TRAIN_AVERAGE_H

#include "runtime/Safetensors.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::train {

/// The mean of the parameters of `checkpoints` (step, path), in f32, with
/// the steps in the metadata as averaged_steps ("1000,2000"). Refused, with
/// the file and the tensor named: a non-float or non-finite parameter,
/// checkpoints of different models, a mean beyond f32's range.
ErrorOr<SafeTensorFile> averageCheckpoints(
    const std::vector<std::pair<int64_t, std::string>> &checkpoints);

} // namespace loom::train

#endif // LOOM_API_TRAIN_AVERAGE_H
