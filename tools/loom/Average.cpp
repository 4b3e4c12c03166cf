//===- Average.cpp - `loom average` ---------------------------------------===//
//
// Averages the parameters of the last N checkpoints of a run, the usual
// last step of training a translator (Vaswani et al. average the last 5 or
// 20). Checkpoints are DIR/checkpoints/step-<step>.safetensors, as
// `loom train` writes them; the optimizer state they carry (`exp_avg.*`)
// is left out of the average. The result holds parameters only and is
// written atomically, by default to DIR/model.safetensors, which
// `loom translate --model DIR` reads.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "api/train/Checkpoint.h"

#include "runtime/Safetensors.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstdio>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct AverageOptions {
  std::string dir;
  std::string output;
  int64_t last = 5;
};

llvm::Error average(const AverageOptions &o) {
  if (o.last < 1)
    return error("--last must be at least 1");
  auto checkpoints = toExpected(train::listCheckpoints(o.dir));
  if (!checkpoints)
    return checkpoints.takeError();
  if (int64_t(checkpoints->size()) < o.last)
    return error(llvm::formatv("'{0}/checkpoints' holds {1} checkpoints, "
                               "fewer than --last {2}",
                               o.dir, checkpoints->size(), o.last));
  std::vector<std::pair<int64_t, std::string>> chosen(
      checkpoints->end() - o.last, checkpoints->end());
  std::string path = o.output.empty() ? o.dir + "/model.safetensors" : o.output;
  // The average holds no optimizer state: written over a checkpoint it
  // would end the run, and written among them it would be taken for one.
  std::vector<std::string> inputs;
  for (const auto &checkpoint : *checkpoints)
    inputs.push_back(checkpoint.second);
  if (llvm::Error err = checkOutputFile(path, "--output", inputs))
    return err;
  if (sameFile(llvm::sys::path::parent_path(path).empty()
                   ? "."
                   : llvm::sys::path::parent_path(path).str(),
               o.dir + "/checkpoints"))
    return error("--output: '" + path +
                 "' is inside the run's checkpoints "
                 "directory, where it would be taken for a checkpoint");

  std::map<std::string, std::vector<double>> sums;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (size_t c = 0; c < chosen.size(); ++c) {
    const std::string &path = chosen[c].second;
    auto file = loadSafetensors(path);
    if (!file)
      return error(file.error());
    size_t params = 0;
    for (const auto &[name, tensor] : file->tensors) {
      if (llvm::StringRef(name).starts_with("exp_avg"))
        continue;
      ++params;
      // One NaN would make the average NaN.
      // Integers would be averaged into fractions no integer tensor holds.
      if (tensor.dtype != "F32" && tensor.dtype != "F64" &&
          tensor.dtype != "F16" && tensor.dtype != "BF16")
        return error("'" + path + "': tensor '" + name + "' has dtype " +
                     tensor.dtype + "; only float parameters are averaged");
      if (std::optional<NonFinite> bad = firstNonFinite(tensor))
        return error("'" + path + "': tensor '" + name + "' holds " +
                     bad->describe());
      auto values = toDoubles(tensor);
      if (!values)
        return error("'" + path + "': tensor '" + name +
                     "': " + values.error());
      if (c == 0) {
        shapes[name] = tensor.shape;
        sums[name] = *values;
        continue;
      }
      auto it = shapes.find(name);
      if (it == shapes.end() || it->second != tensor.shape)
        return error("'" + path + "': tensor '" + name +
                     "' is not in the first checkpoint, or has another "
                     "shape; checkpoints of different models cannot be "
                     "averaged");
      std::vector<double> &sum = sums[name];
      for (size_t i = 0; i < sum.size(); ++i)
        sum[i] += (*values)[i];
    }
    if (params != sums.size())
      return error("'" + path + "' lacks parameters the first checkpoint has");
  }

  SafeTensorFile out;
  for (auto &[name, sum] : sums) {
    for (double &x : sum)
      x /= double(chosen.size());
    auto tensor = fromDoubles(sum, shapes[name], "F32");
    if (!tensor)
      return error(tensor.error());
    // Finite inputs of a wider dtype may still average beyond f32.
    if (std::optional<NonFinite> bad = firstNonFinite(*tensor))
      return error("the average of tensor '" + name + "' is " +
                   bad->describe() + ", beyond the range of f32");
    out.tensors[name] = std::move(*tensor);
  }
  out.metadata["averaged_steps"] = "";
  for (size_t c = 0; c < chosen.size(); ++c)
    out.metadata["averaged_steps"] +=
        (c ? "," : "") + std::to_string(chosen[c].first);
  if (llvm::Error err = toError(saveSafetensors(path, out)))
    return err;
  std::printf("averaged %zu checkpoints (steps %s) into %s\n", chosen.size(),
              out.metadata["averaged_steps"].c_str(), path.c_str());
  return llvm::Error::success();
}

} // namespace

void addAverageCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<AverageOptions>();
  CLI::App *cmd = app.add_subcommand(
      "average", "Average the parameters of a run's last checkpoints");
  cmd->add_option("dir", o->dir, "The run's directory")->required();
  cmd->add_option("--last", o->last, "How many of the latest checkpoints")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output,
                  "Where to write (default: DIR/model.safetensors)");
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = average(*o))
      exitCode = fail("average", std::move(err));
  });
}

} // namespace loom::cli
