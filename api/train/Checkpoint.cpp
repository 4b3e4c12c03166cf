//===- Checkpoint.cpp - Training checkpoints on disk ----------------------===//

#include "api/train/Checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace loom::train {

namespace {

Status error(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

/// "step-<digits>.safetensors" as its step, or -1.
int64_t checkpointStep(const std::string &filename) {
  const std::string prefix = "step-", suffix = ".safetensors";
  if (filename.size() <= prefix.size() + suffix.size() ||
      filename.compare(0, prefix.size(), prefix) != 0 ||
      filename.compare(filename.size() - suffix.size(), suffix.size(),
                       suffix) != 0)
    return -1;
  std::string digits = filename.substr(
      prefix.size(), filename.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(digits);
}

/// "parameter 'x' holds NaN at element 3" when state tensor `name` of
/// `session` is not finite, else nothing.
std::optional<std::string> nonFinite(runtime::Session &session,
                                     const std::string &name,
                                     const SafeTensor &tensor) {
  std::optional<NonFinite> bad = firstNonFinite(tensor);
  if (!bad)
    return std::nullopt;
  const runtime::Program::StateTensor *state =
      session.program().stateTensor(name);
  return std::string(state && state->isParameter ? "parameter"
                                                 : "optimizer state") +
         " '" + name + "' holds " + bad->describe();
}

} // namespace

std::string metadataNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string checkpointPath(const std::string &dir, int64_t step) {
  return dir + "/checkpoints/step-" + std::to_string(step) + ".safetensors";
}

ErrorOr<std::vector<std::pair<int64_t, std::string>>>
listCheckpoints(const std::string &dir) {
  std::string folder = dir + "/checkpoints";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec))
    return found;
  for (const auto &entry : std::filesystem::directory_iterator(folder, ec)) {
    int64_t step = checkpointStep(entry.path().filename().string());
    if (step < 0)
      continue;
    found.emplace_back(step, entry.path().string());
  }
  if (ec)
    return Status::failure("cannot read '" + folder + "': " + ec.message(),
                           ErrorCode::Io);
  std::sort(found.begin(), found.end());
  return found;
}

Status saveState(runtime::Session &session, const std::string &path,
                 const Metadata &metadata, bool parametersOnly) {
  SafeTensorFile file;
  file.metadata = metadata;
  for (const std::string &name :
       parametersOnly ? session.parameterNames() : session.stateNames()) {
    ErrorOr<runtime::Tensor> state = session.getState(name);
    if (!state)
      return state.status();
    SafeTensor &t = file.tensors[name];
    t.dtype = dtypeInfo(state->dtype()).safetensorsName;
    t.shape = state->shape();
    const auto *bytes = static_cast<const uint8_t *>(state->data());
    t.bytes.assign(bytes, bytes + state->bytes());
    // A step can turn the state non-finite with a finite loss (a gradient
    // that overflowed); such a checkpoint could only be resumed into NaN.
    if (std::optional<std::string> bad = nonFinite(session, name, t))
      return error("'" + path + "' is not written: " + *bad +
                   "; training diverged");
  }
  return saveSafetensors(path, file);
}

Status loadState(runtime::Session &session, const SafeTensorFile &file,
                 const std::string &path) {
  for (const std::string &name : session.stateNames()) {
    const runtime::Program::StateTensor &state =
        *session.program().stateTensor(name);
    auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      return error("checkpoint '" + path + "' has no tensor '" + name +
                   "'; it was not written for this model");
    const SafeTensor &t = it->second;
    if (t.dtype != dtypeInfo(state.dtype).safetensorsName ||
        t.shape != state.shape ||
        int64_t(t.bytes.size()) !=
            runtime::numelOf(state.shape) * dtypeSize(state.dtype))
      return error("checkpoint '" + path + "': tensor '" + name +
                   "' has another dtype or shape than the model's");
    if (std::optional<std::string> bad = nonFinite(session, name, t))
      return error("checkpoint '" + path + "': " + *bad);
    runtime::TensorRef value{const_cast<uint8_t *>(t.bytes.data()), state.dtype,
                             state.shape};
    LOOM_RETURN_IF_ERROR(session.setState(name, value));
  }
  if (file.tensors.size() != session.stateNames().size())
    return error("checkpoint '" + path +
                 "' holds tensors this model does not have");
  return Status::success();
}

ErrorOr<std::vector<std::string>>
pruneCheckpoints(const std::string &dir, int64_t keep, int64_t protect) {
  auto checkpoints = listCheckpoints(dir);
  if (!checkpoints)
    return checkpoints.status();
  std::vector<std::string> deleted;
  int64_t excess = int64_t(checkpoints->size()) - keep;
  for (int64_t i = 0; i < excess; ++i) {
    const auto &[step, path] = (*checkpoints)[i];
    if (step == protect)
      continue;
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (ec)
      return Status::failure("cannot delete '" + path + "': " + ec.message(),
                             ErrorCode::Io);
    deleted.push_back(path);
  }
  return deleted;
}

} // namespace loom::train
