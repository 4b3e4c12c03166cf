//===- TrainStep.cpp - Driving a compiled @train_step ---------------------===//

#include "runtime/TrainStep.h"

#include "abi/ModelAbi.h"

#include <algorithm>

namespace loom::runtime {

ErrorOr<double> runTrainStep(Session &session, const TensorRef &src,
                             const TensorRef &tgt, int64_t seed, int64_t step) {
  ErrorOr<Tensor> seedT = scalarTensor(DType::I64, 0);
  ErrorOr<Tensor> stepT = scalarTensor(DType::I64, 0);
  if (!seedT || !stepT)
    return !seedT ? seedT.status() : stepT.status();
  // Through the pointer: a double does not hold every int64 seed exactly.
  *static_cast<int64_t *>(seedT->data()) = seed;
  *static_cast<int64_t *>(stepT->data()) = step;
  std::vector<Tensor> staging;
  std::vector<TensorRef> inputs;
  for (const std::string &name : session.inputNames(abi::kTrainStep)) {
    TensorRef host;
    if (name == abi::kSrc)
      host = src;
    else if (name == abi::kTgt)
      host = tgt;
    else if (name == abi::kSeed)
      host = seedT->ref();
    else if (name == abi::kStep)
      host = stepT->ref();
    else
      return Status::failure("@train_step takes an unknown input '" + name +
                                 "'",
                             ErrorCode::Unsupported);
    ErrorOr<TensorRef> input = deviceInput(session.device(), host, staging);
    if (!input)
      return input.status();
    inputs.push_back(*input);
  }
  auto out = session.run(abi::kTrainStep, inputs);
  if (!out)
    return out.status();
  for (const NamedTensor &t : *out)
    if (t.name == abi::kLossOutput) {
      ErrorOr<Tensor> loss = toHost(t.tensor);
      if (!loss)
        return loss.status();
      return double(loss->f32()[0]);
    }
  return Status::failure("@train_step returns no loss", ErrorCode::Corrupt);
}

ErrorOr<Tensor> idsTensor(const std::vector<std::vector<int64_t>> &rows) {
  size_t width = 0;
  for (const auto &row : rows)
    width = std::max(width, row.size());
  ErrorOr<Tensor> ids =
      Tensor::host(DType::I32, {static_cast<int64_t>(rows.size()),
                                static_cast<int64_t>(width)});
  if (!ids)
    return ids;
  auto *out = static_cast<int32_t *>(ids->data());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < rows[r].size(); ++t)
      out[r * width + t] = static_cast<int32_t>(rows[r][t]);
  return ids;
}

ErrorOr<Tensor> scalarTensor(DType dtype, double value) {
  ErrorOr<Tensor> t = Tensor::host(dtype, {});
  if (!t)
    return t;
  switch (dtype) {
  case DType::F32:
    *t->f32() = static_cast<float>(value);
    break;
  case DType::F64:
    *static_cast<double *>(t->data()) = value;
    break;
  case DType::I32:
    *static_cast<int32_t *>(t->data()) = static_cast<int32_t>(value);
    break;
  case DType::I64:
    *static_cast<int64_t *>(t->data()) = static_cast<int64_t>(value);
    break;
  default:
    return Status::failure(std::string("no scalar of ") + dtypeName(dtype));
  }
  return t;
}

} // namespace loom::runtime
