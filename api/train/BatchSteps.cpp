//===- BatchSteps.cpp - Optimizer steps on one given batch ----------------===//

#include "api/train/BatchSteps.h"

#include "abi/ModelAbi.h"
#include "runtime/Program.h"
#include "runtime/Safetensors.h"

#include <cstring>

namespace loom::train {

namespace {

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

} // namespace

runtime::NamedBatch OwnedBatch::batch() const {
  runtime::NamedBatch refs;
  for (const auto &[name, tensor] : tensors)
    refs[name] = tensor.ref();
  return refs;
}

ErrorOr<OwnedBatch> readBatchFile(const runtime::Session &session,
                                  const std::string &path) {
  ErrorOr<const runtime::Program::Entry *> entry =
      session.program().entry(abi::kTrainStep);
  if (!entry)
    return invalid("the executable has no @train_step: compile the model "
                   "with its loss");
  ErrorOr<SafeTensorFile> file = loadSafetensors(path);
  if (!file)
    return file.status().withContext("batch '" + path + "'");
  OwnedBatch out;
  for (const runtime::Program::Value &input : (*entry)->inputs) {
    if (input.name == abi::kSeed || input.name == abi::kStep)
      continue;
    auto it = file->tensors.find(input.name);
    if (it == file->tensors.end())
      return invalid("batch '" + path + "' has no tensor '" + input.name +
                     "', an input of @train_step");
    // Through doubles, which hold every f32 and every id exactly; an
    // integer input refuses a fraction rather than round it.
    ErrorOr<std::vector<double>> values = toDoubles(it->second);
    if (!values)
      return values.status().withContext("batch tensor '" + input.name + "'");
    ErrorOr<SafeTensor> converted = fromDoubles(
        *values, it->second.shape, dtypeInfo(input.dtype).safetensorsName);
    if (!converted)
      return invalid("batch tensor '" + input.name + "': @train_step takes " +
                     dtypeName(input.dtype) + ": " + converted.error());
    ErrorOr<runtime::Tensor> tensor =
        runtime::Tensor::host(input.dtype, it->second.shape);
    if (!tensor)
      return tensor.status();
    std::memcpy(tensor->data(), converted->bytes.data(), tensor->bytes());
    out.tensors.emplace(input.name, std::move(*tensor));
  }
  for (const auto &[name, tensor] : file->tensors)
    if (!out.tensors.count(name))
      return invalid("batch '" + path + "' holds '" + name +
                     "', which @train_step does not take");
  return out;
}

Status trainOnBatch(runtime::Session &session, const runtime::NamedBatch &batch,
                    int64_t steps, int64_t seed,
                    const std::function<void(int64_t, double)> &onStep) {
  if (steps < 1)
    return invalid("the steps must be at least 1");
  for (int64_t step = 1; step <= steps; ++step) {
    ErrorOr<double> loss = runtime::runTrainStep(session, batch, seed, step);
    if (!loss)
      return loss.status().withContext("step " + std::to_string(step));
    if (onStep)
      onStep(step, *loss);
  }
  return Status::success();
}

Status saveTensors(const std::string &path,
                   const std::vector<runtime::NamedTensor> &tensors) {
  SafeTensorFile file;
  for (const runtime::NamedTensor &named : tensors) {
    const runtime::Tensor &t = named.tensor;
    if (t.device())
      return invalid("'" + named.name + "' is not a host tensor");
    SafeTensor &out = file.tensors[named.name];
    out.dtype = dtypeInfo(t.dtype()).safetensorsName;
    out.shape = t.shape();
    const auto *bytes = static_cast<const uint8_t *>(t.data());
    out.bytes.assign(bytes, bytes + t.bytes());
    if (std::optional<NonFinite> bad = firstNonFinite(out))
      return invalid("'" + path + "' is not written: '" + named.name +
                     "' holds " + bad->describe());
  }
  return saveSafetensors(path, file);
}

} // namespace loom::train
