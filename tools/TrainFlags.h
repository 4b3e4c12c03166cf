//===- TrainFlags.h - The options both trainers take ------------*- C++ -*-===//
//
// `loom train` and `loom-train` run training the same way (the trainer
// library, api/train/), so the options that do not change the compiled
// program are declared once, here; `loom train` adds the ones that do (the
// model, the batch bounds, the schedule), which `loom prepare` takes for
// `loom-train`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_TRAINFLAGS_H
#define LOOM_TOOLS_TRAINFLAGS_H

#include "api/train/TrainingJob.h"

#include "CLI/CLI.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <unistd.h>

namespace loom {

struct RunFlags {
  std::vector<std::string> train, valid;
  std::string out;
  int64_t steps = 0, epochs = 0;
  double timeLimit = 0;
  uint64_t seed = 1;
  int threads = 0;
  std::string device;
  int64_t validEvery = 0;
  int64_t logEvery = 100;
  int64_t keep = 5;
  std::string progress = "auto";
  bool resume = false;
  bool noPlot = false;
  double commTimeout = 600;
};

/// Adds --train, --valid, --out, --steps, --epochs, --time-limit, --seed,
/// --threads,
/// --device, --valid-every, --log-every, --keep, --progress, --comm-timeout,
/// --no-plot and --resume to `cmd`. `outHelp` says where the run goes by
/// default; `deviceHelp` what --device defaults to.
inline void addRunFlags(CLI::App *cmd, RunFlags &o, const std::string &outHelp,
                        const std::string &deviceHelp) {
  cmd->add_option("--train", o.train, "Training corpus: SRC TGT")
      ->expected(2)
      ->required();
  cmd->add_option("--valid", o.valid,
                  "Validation corpus: SRC TGT (loss and greedy BLEU)")
      ->expected(2);
  cmd->add_option("--out", o.out, outHelp);
  cmd->add_option("--steps", o.steps, "Stop after this many steps");
  cmd->add_option("--epochs", o.epochs, "Stop after this many epochs");
  cmd->add_option("--time-limit", o.timeLimit,
                  "Stop after this many seconds of training, validating and "
                  "saving as at the end (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed,
                  "Seeds the vocabulary, initial parameters, batch order "
                  "and dropout")
      ->capture_default_str();
  cmd->add_option("--threads", o.threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--device", o.device,
                  "Where training runs: cpu, or cuda (cuda:N for GPU N); " +
                      deviceHelp);
  cmd->add_option("--valid-every", o.validEvery,
                  "Validate and checkpoint every N steps (0: every epoch)")
      ->capture_default_str();
  cmd->add_option("--log-every", o.logEvery, "Report every N steps")
      ->capture_default_str();
  cmd->add_option("--keep", o.keep, "Step checkpoints kept, besides the best")
      ->capture_default_str();
  cmd->add_option("--progress", o.progress,
                  "auto (a bar on a terminal), bar or lines")
      ->check(CLI::IsMember({"auto", "bar", "lines"}))
      ->capture_default_str();
  cmd->add_option("--comm-timeout", o.commTimeout,
                  "Under an MPI launcher: seconds a rank waits for the "
                  "others before it ends the job")
      ->capture_default_str();
  cmd->add_flag("--no-plot", o.noPlot,
                "Do not draw DIR/curves.png after each validation");
  cmd->add_flag("--resume", o.resume,
                "Continue the run in --out from its latest checkpoint");
}

/// The job the flags ask for, introduced as `command`; the settings but
/// the seed are left at their defaults for the caller.
inline train::JobOptions jobOptions(const RunFlags &flags,
                                    const std::string &command) {
  train::JobOptions o;
  o.train = flags.train;
  o.valid = flags.valid;
  o.dir = flags.out;
  o.resume = flags.resume;
  o.steps = flags.steps;
  o.epochs = flags.epochs;
  o.timeLimitSeconds = flags.timeLimit;
  o.threads = flags.threads;
  o.device = flags.device;
  o.validEvery = flags.validEvery;
  o.logEvery = flags.logEvery;
  o.keep = flags.keep;
  o.progressBar = flags.progress == "bar" ||
                  (flags.progress == "auto" && ::isatty(STDOUT_FILENO));
  o.drawCurves = !flags.noPlot;
  o.commTimeoutSeconds = flags.commTimeout;
  o.settings.seed = flags.seed;
  o.command = command;
  return o;
}

} // namespace loom

#endif // LOOM_TOOLS_TRAINFLAGS_H
