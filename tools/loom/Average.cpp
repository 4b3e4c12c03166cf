//===- Average.cpp - `loom average` ---------------------------------------===//
//
// Averages the parameters of the last N checkpoints of a run
// (api/train/Average.h). The result holds parameters only and is written
// atomically, by default to DIR/model.safetensors, which `loom translate
// --model DIR` reads; never over or among the checkpoints.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "api/train/Average.h"
#include "api/train/Checkpoint.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <filesystem>

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
  std::error_code ec;
  if (!std::filesystem::is_directory(o.dir, ec))
    return error("'" + o.dir + "' is not a directory");
  if (!std::filesystem::is_directory(o.dir + "/checkpoints", ec))
    return error("'" + o.dir +
                 "' has no checkpoints/ folder: it is not a run directory "
                 "`loom train` wrote");
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

  auto out = toExpected(train::averageCheckpoints(chosen));
  if (!out)
    return out.takeError();
  if (llvm::Error err = toError(saveSafetensors(path, *out)))
    return err;
  std::printf("averaged %zu checkpoints (steps %s) into %s\n", chosen.size(),
              out->metadata["averaged_steps"].c_str(), path.c_str());
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
