//===- main.cpp - The loom command-line tool ------------------------------===//
//
// `loom <command> ...`: compile, inspect, forward, grad, demo, bench, score,
// translate, export, average, train. Each command lives in its own file (see
// Commands.h). Any failure prints one line naming the problem and exits 1.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  CLI::App app("Loom: a compiler for Transformer models", "loom");
  app.require_subcommand(1);
  int exitCode = 0;
  loom::cli::addCompileCommand(app, exitCode);
  loom::cli::addForwardCommand(app, exitCode);
  loom::cli::addGradCommand(app, exitCode);
  loom::cli::addDemoCommand(app, exitCode);
  loom::cli::addBenchCommand(app, exitCode);
  loom::cli::addScoreCommand(app, exitCode);
  loom::cli::addTranslateCommand(app, exitCode);
  loom::cli::addExportCommand(app, exitCode);
  loom::cli::addAverageCommand(app, exitCode);
  loom::cli::addTrainCommand(app, exitCode);
  loom::cli::addInspectCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // Usage errors exit 1 like every other refusal; --help exits 0.
    return app.exit(e) == 0 ? 0 : 1;
  }
  return exitCode;
}
