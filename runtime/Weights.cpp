//===- Weights.cpp - Parameters from safetensors files --------------------===//

#include "runtime/Weights.h"

#include "abi/InitialParameters.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace loom::runtime {

namespace {

/// Checks the tensors of `file` (dtype and shape; data not needed) against
/// the program's parameters: every one present with its shape and a float
/// dtype, nothing else.
Status checkParameters(const Program &program, const SafeTensorFile &file,
                       const std::string &path) {
  for (const auto &[name, tensor] : file.tensors) {
    const Program::StateTensor *state = program.stateTensor(name);
    if (!state || !state->isParameter)
      return Status::failure("weights '" + path + "' hold tensor '" + name +
                             "', which is not a parameter of this model");
  }
  for (const std::string &name : program.parameterNames()) {
    const Program::StateTensor &state = *program.stateTensor(name);
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      return Status::failure("weights '" + path + "' have no tensor '" + name +
                             "' (shape " + shapeString(state.shape) + ")");
    const SafeTensor &tensor = it->second;
    if (tensor.shape != state.shape)
      return Status::failure("tensor '" + name + "' in '" + path +
                             "' has shape " + shapeString(tensor.shape) +
                             ", but the model needs " +
                             shapeString(state.shape));
    std::optional<DType> dtype = dtypeOfSafetensors(tensor.dtype);
    if (!dtype || !isFloatDType(*dtype))
      return Status::failure("tensor '" + name + "' in '" + path +
                             "' has dtype " + tensor.dtype +
                             "; parameters must be floats");
    if (state.dtype != DType::F32)
      return Status::failure("parameter '" + name + "' is not f32",
                             ErrorCode::Unsupported);
  }
  return Status::success();
}

/// A parameter that is NaN or infinite somewhere. The file holds what its
/// writer meant (its checksums say so), so this is not Corrupt: the caller
/// gave weights no model can use, as with a wrong shape.
Status nonFinite(const std::string &path, const std::string &name,
                 const std::string &what) {
  return Status::failure("weights '" + path + "': parameter '" + name +
                             "' holds " + what,
                         ErrorCode::InvalidArgument);
}

/// Copies one checked tensor into the session's parameter, as f32. A NaN or
/// infinite value, or one beyond f32's range, is refused: the model would
/// compute NaN from it and decoding would return nothing useful.
Status setParameter(Session &session, const std::string &name,
                    const SafeTensor &tensor, const std::string &path) {
  DType dtype = *dtypeOfSafetensors(tensor.dtype);
  if (dtype == DType::F32) {
    if (std::optional<NonFinite> bad = firstNonFinite(tensor))
      return nonFinite(path, name, bad->describe());
    TensorRef value{const_cast<uint8_t *>(tensor.bytes.data()), DType::F32,
                    tensor.shape};
    return session.setState(name, value);
  }
  ErrorOr<Tensor> host = Tensor::host(DType::F32, tensor.shape);
  if (!host)
    return host.status();
  ErrorOr<std::vector<double>> values = toDoubles(tensor);
  if (!values)
    return Status::failure("tensor '" + name + "' in '" + path +
                           "': " + values.error());
  for (size_t i = 0; i < values->size(); ++i) {
    double v = (*values)[i];
    float f = static_cast<float>(v);
    if (!std::isfinite(f))
      return nonFinite(path, name,
                       std::isfinite(v)
                           ? valueName(v) + " at element " + std::to_string(i) +
                                 ", beyond the range of f32"
                           : NonFinite{int64_t(i), v}.describe());
    host->f32()[i] = f;
  }
  return session.setState(name, host->ref());
}

} // namespace

Status loadParameters(Session &session, const SafeTensorFile &file,
                      const std::string &path) {
  LOOM_RETURN_IF_ERROR(checkParameters(session.program(), file, path));
  for (const std::string &name : session.program().parameterNames())
    LOOM_RETURN_IF_ERROR(
        setParameter(session, name, file.tensors.at(name), path));
  return Status::success();
}

/// Reads `path` tensor by tensor: `onTensor` (null: the header alone) after
/// the header is checked against `program`. Failures of the file itself are
/// prefixed with "cannot load weights"; the model's refusals name the tensor.
static Status readParameters(
    const Program &program, const std::string &path,
    const std::function<Status(const std::string &, SafeTensor &)> &onTensor) {
  bool refusedByModel = false; // the file is fine, the model refuses it
  auto ours = [&](Status status) {
    refusedByModel = !status.ok();
    return status;
  };
  std::function<Status(const std::string &, SafeTensor &)> each;
  if (onTensor)
    each = [&](const std::string &name, SafeTensor &tensor) {
      return ours(onTensor(name, tensor));
    };
  Status read = readSafetensors(
      path,
      [&](const SafeTensorFile &header) {
        return ours(checkParameters(program, header, path));
      },
      each);
  if (read.ok() || refusedByModel)
    return read;
  // The loader's message usually names the file already.
  if (read.message().find(path) != std::string::npos)
    return Status::failure("cannot load weights: " + read.message(),
                           read.code());
  return Status::failure(
      "cannot load weights '" + path + "': " + read.message(), read.code());
}

Status loadParametersFile(Session &session, const std::string &path) {
  // Tensor by tensor: the file is never in memory whole beside the
  // parameters it fills.
  return readParameters(session.program(), path,
                        [&](const std::string &name, SafeTensor &tensor) {
                          return setParameter(session, name, tensor, path);
                        });
}

Status checkParametersFile(const Program &program, const std::string &path) {
  return readParameters(program, path, nullptr);
}

Status initParameters(Session &session, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // parameterNames() is sorted, as initialParameters' map is.
  for (const std::string &name : session.parameterNames()) {
    const Program::StateTensor *state = session.program().stateTensor(name);
    ErrorOr<Tensor> host = Tensor::host(DType::F32, state->shape);
    if (!host)
      return host.status();
    abi::drawInitialParameter(name, state->shape, rng, host->f32());
    LOOM_RETURN_IF_ERROR(session.setState(name, host->ref()));
  }
  return Status::success();
}

} // namespace loom::runtime
