//===- TrainStep.h - Driving a compiled @train_step -------------*- C++ -*-===//
//
// One optimizer step on a batch: binds @train_step's inputs by name (the
// batch, dropout's seed, Adam's step), runs it, and returns the loss. The
// parameters and both moments are updated in place in the session's state,
// so a training loop is this call in a loop plus checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TRAINSTEP_H
#define LOOM_RUNTIME_TRAINSTEP_H

#include "runtime/Session.h"

#include <cstdint>

namespace loom::runtime {

/// Runs one @train_step on host batch `src` [B, S] and `tgt` [B, T] (i32,
/// 0-padded): dropout drawn from `seed`, the schedule and Adam's bias
/// correction at `step` (from 1). Returns the batch's loss as computed.
ErrorOr<double> runTrainStep(Session &session, const TensorRef &src,
                             const TensorRef &tgt, int64_t seed, int64_t step);

/// A [rows, longest] i32 host tensor of `rows`, padded with 0.
ErrorOr<Tensor> idsTensor(const std::vector<std::vector<int64_t>> &rows);

/// A rank-0 host tensor of `dtype` holding `value`.
ErrorOr<Tensor> scalarTensor(DType dtype, double value);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_TRAINSTEP_H
