//===- DemoCommand.cpp - `loom demo` options ------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Demo.h"

#include <memory>

namespace loom::cli {

void addDemoCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<DemoOptions>();
  CLI::App *cmd = app.add_subcommand(
      "demo", "Train the tiny Transformer on a synthetic task, then decode");
  cmd->add_option("--task", options->task, "reverse or copy")
      ->capture_default_str();
  cmd->add_option("--steps", options->steps, "Training steps")
      ->capture_default_str();
  cmd->add_option("--batch", options->batch, "Sentences per batch")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Warm-up steps")
      ->capture_default_str();
  cmd->add_option("--lr-scale", options->lrScale,
                  "Scale of the learning-rate schedule")
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of data and weights")
      ->capture_default_str();
  cmd->add_option("--held-out", options->heldOut,
                  "Held-out sentences to decode")
      ->capture_default_str();
  cmd->add_option("--threads", options->threads,
                  "CPU threads (0: one per hardware thread; the tiny model "
                  "gains nothing from more than one)")
      ->capture_default_str();
  cmd->callback([options, &exitCode] { exitCode = runDemo(*options); });
}

} // namespace loom::cli
