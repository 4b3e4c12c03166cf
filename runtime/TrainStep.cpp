//===- TrainStep.cpp - Driving a compiled @train_step ---------------------===//

#include "runtime/TrainStep.h"

#include "abi/ModelAbi.h"

#include <algorithm>
#include <string_view>

namespace loom::runtime {

namespace {

/// `entry`'s inputs on the session's device, in order: seed and step from
/// the arguments, every other input from `batch` by name. `staging` holds
/// what had to be copied.
ErrorOr<std::vector<TensorRef>>
bindInputs(Session &session, const std::string &entry, const NamedBatch &batch,
           int64_t seed, int64_t step, std::vector<Tensor> &staging) {
  if (!session.hasEntry(entry))
    return Status::failure("the executable has no @" + entry,
                           ErrorCode::InvalidArgument);
  for (const std::string &name :
       {std::string(abi::kSeed), std::string(abi::kStep)})
    if (batch.count(name))
      return Status::failure("the batch holds '" + name +
                                 "', which the trainer passes itself",
                             ErrorCode::InvalidArgument);
  std::vector<std::string> names = session.inputNames(entry);
  for (const auto &[name, tensor] : batch)
    if (std::find(names.begin(), names.end(), name) == names.end())
      return Status::failure("the batch holds '" + name + "', which @" + entry +
                                 " does not take",
                             ErrorCode::InvalidArgument);
  std::vector<TensorRef> inputs;
  for (const std::string &name : names) {
    TensorRef host;
    if (name == abi::kSeed || name == abi::kStep) {
      ErrorOr<Tensor> scalar = scalarTensor(DType::I64, 0);
      if (!scalar)
        return scalar.status();
      // Through the pointer: a double does not hold every int64 seed exactly.
      *static_cast<int64_t *>(scalar->data()) =
          name == abi::kSeed ? seed : step;
      staging.push_back(std::move(*scalar));
      host = staging.back().ref();
    } else {
      auto it = batch.find(name);
      if (it == batch.end())
        return Status::failure("the batch has no tensor '" + name +
                                   "', an input of @" + entry,
                               ErrorCode::InvalidArgument);
      host = it->second;
    }
    ErrorOr<TensorRef> input = deviceInput(session.device(), host, staging);
    if (!input)
      return input.status();
    inputs.push_back(*input);
  }
  return inputs;
}

} // namespace

ErrorOr<double> runTrainStep(Session &session, const NamedBatch &batch,
                             int64_t seed, int64_t step) {
  std::vector<Tensor> staging;
  ErrorOr<std::vector<TensorRef>> inputs =
      bindInputs(session, abi::kTrainStep, batch, seed, step, staging);
  if (!inputs)
    return inputs.status();
  auto out = session.run(abi::kTrainStep, *inputs);
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

ErrorOr<double> runTrainStep(Session &session, const TensorRef &src,
                             const TensorRef &tgt, int64_t seed, int64_t step) {
  return runTrainStep(session, NamedBatch{{abi::kSrc, src}, {abi::kTgt, tgt}},
                      seed, step);
}

ErrorOr<std::vector<NamedTensor>>
runLossGradient(Session &session, const NamedBatch &batch, int64_t seed) {
  std::vector<Tensor> staging;
  ErrorOr<std::vector<TensorRef>> inputs =
      bindInputs(session, abi::kLossGrad, batch, seed, 0, staging);
  if (!inputs)
    return inputs.status();
  auto out = session.run(abi::kLossGrad, *inputs);
  if (!out)
    return out.status();
  std::vector<NamedTensor> grads;
  for (NamedTensor &t : *out) {
    std::string_view name = t.name;
    if (name.substr(0, std::string_view(abi::kGradPrefix).size()) !=
        abi::kGradPrefix)
      continue;
    ErrorOr<Tensor> host = toHost(t.tensor);
    if (!host)
      return host.status();
    name.remove_prefix(std::string_view(abi::kGradPrefix).size());
    grads.push_back({std::string(name), std::move(*host)});
  }
  return grads;
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
