//===- Average.cpp - Averaging a run's last checkpoints -------------------===//

#include "api/train/Average.h"

#include "abi/ModelAbi.h"
#include "api/Translator.h"

#include <map>
#include <string_view>

namespace loom::train {

namespace {

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

/// The metadata that says which run a checkpoint belongs to.
constexpr const char *kRunIdentity[] = {"config", kVocabularyChecksumKey,
                                        "train_fnv1a64", "seed"};

bool isMoment(std::string_view name) {
  return name.substr(0, std::string_view(abi::kFirstMomentPrefix).size()) ==
             abi::kFirstMomentPrefix ||
         name.substr(0, std::string_view(abi::kSecondMomentPrefix).size()) ==
             abi::kSecondMomentPrefix;
}

} // namespace

ErrorOr<SafeTensorFile> averageCheckpoints(
    const std::vector<std::pair<int64_t, std::string>> &checkpoints) {
  if (checkpoints.empty())
    return invalid("no checkpoints to average");
  std::map<std::string, std::vector<double>> sums;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, std::string> firstRun;
  for (size_t c = 0; c < checkpoints.size(); ++c) {
    const std::string &path = checkpoints[c].second;
    ErrorOr<SafeTensorFile> file = loadSafetensors(path);
    if (!file)
      return file.status();
    // Checkpoints of one run record the same config, vocabulary, data and
    // seed (TrainingRun.h's runMetadata); two runs of one model shape
    // would average into parameters neither trained.
    for (const char *key : kRunIdentity) {
      auto it = file->metadata.find(key);
      std::string value = it == file->metadata.end() ? "" : it->second;
      if (c == 0)
        firstRun[key] = value;
      else if (value != firstRun[key])
        return invalid("'" + path + "' is of another run than '" +
                       checkpoints[0].second + "' (its " + key +
                       " differs); only one run's checkpoints are averaged");
    }
    size_t params = 0;
    for (const auto &[name, tensor] : file->tensors) {
      if (isMoment(name))
        continue;
      ++params;
      // Integers would be averaged into fractions no integer tensor holds,
      // and one NaN would make the average NaN.
      if (tensor.dtype != "F32" && tensor.dtype != "F64" &&
          tensor.dtype != "F16" && tensor.dtype != "BF16")
        return invalid("'" + path + "': tensor '" + name + "' has dtype " +
                       tensor.dtype + "; only float parameters are averaged");
      if (std::optional<NonFinite> bad = firstNonFinite(tensor))
        return invalid("'" + path + "': tensor '" + name + "' holds " +
                       bad->describe());
      ErrorOr<std::vector<double>> values = toDoubles(tensor);
      if (!values)
        return values.status().withContext("'" + path + "': tensor '" + name +
                                           "'");
      if (c == 0) {
        shapes[name] = tensor.shape;
        sums[name] = std::move(*values);
        continue;
      }
      auto it = shapes.find(name);
      if (it == shapes.end() || it->second != tensor.shape)
        return invalid("'" + path + "': tensor '" + name +
                       "' is not in the first checkpoint, or has another "
                       "shape; checkpoints of different models cannot be "
                       "averaged");
      std::vector<double> &sum = sums[name];
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += (*values)[i];
    }
    if (params != sums.size())
      return invalid("'" + path +
                     "' lacks parameters the first checkpoint has");
  }

  SafeTensorFile out;
  for (auto &[name, sum] : sums) {
    for (double &x : sum)
      x /= double(checkpoints.size());
    ErrorOr<SafeTensor> tensor = fromDoubles(sum, shapes[name], "F32");
    if (!tensor)
      return tensor.status();
    // Finite inputs of a wider dtype may still average beyond f32.
    if (std::optional<NonFinite> bad = firstNonFinite(*tensor))
      return invalid("the average of tensor '" + name + "' is " +
                     bad->describe() + ", beyond the range of f32");
    out.tensors[name] = std::move(*tensor);
  }
  std::string &steps = out.metadata["averaged_steps"];
  for (size_t c = 0; c < checkpoints.size(); ++c)
    steps += (c ? "," : "") + std::to_string(checkpoints[c].first);
  return out;
}

} // namespace loom::train
