//===- Commands.h - The subcommands of `loom` -------------------*- C++ -*-===//
//
// Each subcommand lives in its own file and registers itself on the app;
// its callback stores the process exit code in `exitCode`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_COMMANDS_H
#define LOOM_TOOLS_LOOM_COMMANDS_H

#include "CLI/CLI.hpp"

namespace loom::cli {

/// `loom compile`: the model module, differentiated, with Adam, as IR.
void addCompileCommand(CLI::App &app, int &exitCode);
/// `loom forward`: per-token log-probabilities of a batch.
void addForwardCommand(CLI::App &app, int &exitCode);
/// `loom grad`: the loss's gradient for every parameter, as safetensors.
void addGradCommand(CLI::App &app, int &exitCode);
/// `loom demo`: trains the tiny model on a synthetic task.
void addDemoCommand(CLI::App &app, int &exitCode);
void addBenchCommand(CLI::App &app, int &exitCode);
/// `loom score`: corpus BLEU against a reference, as sacreBLEU computes it.
void addScoreCommand(CLI::App &app, int &exitCode);
void addTranslateCommand(CLI::App &app, int &exitCode);
/// `loom score-pairs`: the log-probability of given translations.
void addScorePairsCommand(CLI::App &app, int &exitCode);
/// `loom serve`: a translation server over HTTP (Serve.cpp).
void addServeCommand(CLI::App &app, int &exitCode);
/// `loom export`: a translator folder that runs without the compiler.
void addExportCommand(CLI::App &app, int &exitCode);
void addAverageCommand(CLI::App &app, int &exitCode);
/// `loom train`: a translator from a parallel corpus.
void addTrainCommand(CLI::App &app, int &exitCode);
/// `loom prepare`: a folder that trains with loom-train (Prepare.cpp).
void addPrepareCommand(CLI::App &app, int &exitCode);
/// `loom plot`: learning curves of runs as a PNG (Plot.cpp).
void addPlotCommand(CLI::App &app, int &exitCode);
/// `loom inspect`: a compiled executable as protobuf text.
void addInspectCommand(CLI::App &app, int &exitCode);
/// `loom train-steps` (TrainSteps.cpp).
void addTrainStepsCommand(CLI::App &app, int &exitCode);
/// `loom import` and `loom onnx-test` (Onnx.cpp).
void addOnnxCommands(CLI::App &app, int &exitCode);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_COMMANDS_H
