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
#include <map>
#include <string>

namespace loom::runtime {

/// @train_step's (or @loss_grad's) inputs by name, other than dropout's
/// `seed` and Adam's `step`: a Loom model's `src` and `tgt`, an imported
/// model's own inputs and its `targets`. Host tensors.
using NamedBatch = std::map<std::string, TensorRef>;

/// Runs one @train_step on `batch`, each input bound by name, dropout drawn
/// from `seed`, the schedule and Adam's bias correction at `step` (from 1).
/// A batch without one of the entry's inputs, or with a tensor the entry
/// does not take, is an InvalidArgument that names it. Returns the loss.
ErrorOr<double> runTrainStep(Session &session, const NamedBatch &batch,
                             int64_t seed, int64_t step);

/// Runs @loss_grad on `batch` (bound as runTrainStep binds it) and returns
/// the gradient of the loss at the session's parameters, as host tensors
/// named as the parameters are.
ErrorOr<std::vector<NamedTensor>>
runLossGradient(Session &session, const NamedBatch &batch, int64_t seed);

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
