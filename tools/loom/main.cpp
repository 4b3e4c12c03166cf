//===- main.cpp - The loom command-line tool ------------------------------===//
//
// `loom <command> ...`: compile, inspect, forward, grad, demo, bench, score,
// translate, export, average, train. Each command lives in its own file (see
// Commands.h). Any failure prints one line naming the problem and exits 1.
//
//===----------------------------------------------------------------------===//

#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"
#include "tools/loom/Commands.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <exception>
#include <new>

int main(int argc, char **argv) {
  loom::skipLibraryDestructorsOnExit();
  llvm::InitLLVM init(argc, argv);
  CLI::App app("Loom: a compiler for Transformer models", "loom");
  app.require_subcommand(1);
  loom::makeStrict(app, "loom");
  int exitCode = 0;
  loom::cli::addCompileCommand(app, exitCode);
  loom::cli::addForwardCommand(app, exitCode);
  loom::cli::addGradCommand(app, exitCode);
  loom::cli::addDemoCommand(app, exitCode);
  loom::cli::addBenchCommand(app, exitCode);
  loom::cli::addScoreCommand(app, exitCode);
  loom::cli::addTranslateCommand(app, exitCode);
  loom::cli::addScorePairsCommand(app, exitCode);
  loom::cli::addServeCommand(app, exitCode);
  loom::cli::addExportCommand(app, exitCode);
  loom::cli::addPrepareCommand(app, exitCode);
  loom::cli::addAverageCommand(app, exitCode);
  loom::cli::addTrainCommand(app, exitCode);
  loom::cli::addPlotCommand(app, exitCode);
  loom::cli::addInspectCommand(app, exitCode);
  loom::cli::addOnnxCommands(app, exitCode);
  loom::cli::addTrainStepsCommand(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // Usage errors exit 1 like every other refusal; --help exits 0.
    return loom::usageExit(app, e);
  } catch (const std::bad_alloc &) {
    // What reports out-of-memory as a Status does so with a better message;
    // this is for the allocations that throw (a container grown without
    // bound checks), which would otherwise abort.
    std::fprintf(stderr, "loom: error: out of memory\n");
    exitCode = 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "loom: error: %s\n", e.what());
    exitCode = 1;
  }
  // llvm::outs() is buffered and flushed by its static destructor, which
  // the exit below does not run.
  llvm::outs().flush();
  llvm::errs().flush();
  if (llvm::outs().has_error() && exitCode == 0)
    exitCode = 1;
  return loom::exitWithoutLibraryDestructors(exitCode);
}
