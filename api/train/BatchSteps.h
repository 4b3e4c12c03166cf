//===- BatchSteps.h - Optimizer steps on one given batch --------*- C++ -*-===//
//
// The trainer (Trainer.h) draws its batches from a corpus; checking a
// compiled @train_step against another framework needs the opposite: one
// batch, given by name as that framework built it, and N steps from given
// parameters. `loom train-steps` is this over a safetensors batch file.
// Each step is runtime::runTrainStep, the trainer's own step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_BATCHSTEPS_H
#define LOOM_API_TRAIN_BATCHSTEPS_H

#include "runtime/Session.h"
#include "runtime/TrainStep.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom::train {

/// A batch that owns its tensors; batch() lends them to the runtime.
struct OwnedBatch {
  std::map<std::string, runtime::Tensor> tensors;
  runtime::NamedBatch batch() const;
};

/// Reads the safetensors file at `path` as a batch of the session's
/// @train_step: each tensor converted to the dtype of the input of its name
/// (an integer input must get whole numbers). The file must hold every
/// input but `seed` and `step`, and nothing else.
ErrorOr<OwnedBatch> readBatchFile(const runtime::Session &session,
                                  const std::string &path);

/// Runs @train_step `steps` times on `batch`, Adam's step counting from 1
/// (the moments as the session holds them: zero in a fresh one, as a new
/// torch.optim.Adam's), dropout seeded with `seed`; `onStep(step, loss)`
/// after each. The parameters are updated in the session.
Status trainOnBatch(runtime::Session &session, const runtime::NamedBatch &batch,
                    int64_t steps, int64_t seed,
                    const std::function<void(int64_t, double)> &onStep);

/// Writes host tensors as a safetensors file, atomically (gradients, for
/// one): refused when one holds a NaN or an infinity.
Status saveTensors(const std::string &path,
                   const std::vector<runtime::NamedTensor> &tensors);

} // namespace loom::train

#endif // LOOM_API_TRAIN_BATCHSTEPS_H
