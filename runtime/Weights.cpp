//===- Weights.cpp - Parameters from safetensors files --------------------===//

#include "runtime/Weights.h"

namespace loom::runtime {

Status loadParameters(Session &session, const SafeTensorFile &file,
                      const std::string &path) {
  const Program &program = session.program();
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
    ErrorOr<Tensor> host = Tensor::host(DType::F32, state.shape);
    if (!host)
      return host.status();
    if (*dtype == DType::F32) {
      std::copy(tensor.bytes.begin(), tensor.bytes.end(),
                static_cast<uint8_t *>(host->data()));
    } else {
      ErrorOr<std::vector<double>> values = toDoubles(tensor);
      if (!values)
        return Status::failure("tensor '" + name + "' in '" + path +
                               "': " + values.error());
      for (size_t i = 0; i < values->size(); ++i)
        host->f32()[i] = static_cast<float>((*values)[i]);
    }
    LOOM_RETURN_IF_ERROR(session.setState(name, host->ref()));
  }
  return Status::success();
}

Status loadParametersFile(Session &session, const std::string &path) {
  ErrorOr<SafeTensorFile> file = loadSafetensors(path);
  if (!file) {
    // The loader's message usually names the file already.
    if (file.error().find(path) != std::string::npos)
      return Status::failure("cannot load weights: " + file.error(),
                             file.code());
    return Status::failure(
        "cannot load weights '" + path + "': " + file.error(), file.code());
  }
  return loadParameters(session, *file, path);
}

} // namespace loom::runtime
