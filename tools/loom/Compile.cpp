//===- Compile.cpp - `loom compile` ---------------------------------------===//
//
// Builds the model module of a config, adds `@loss_grad` (loom-autodiff) and
// `@train_step` (loom-optimizer), verifies it and prints it. The printed IR
// parses back with `loom-opt`, so every later pass can start from a file.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>

namespace loom::cli {

namespace {

struct CompileOptions {
  ModelOptions model;
  std::string emit = "ir";
  std::string output = "-";
  int64_t warmup = 4000;
};

llvm::Error compile(const CompileOptions &options) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (options.emit != "ir")
    return error("cannot emit '" + options.emit +
                 "' yet; the only output so far is --emit ir");
  if (options.warmup <= 0)
    return error("--warmup must be positive, got " +
                 llvm::Twine(options.warmup));
  auto config = options.model.load();
  if (!config)
    return config.takeError();

  mlir::MLIRContext ctx;
  auto module = buildModelModule(ctx, *config);
  if (!module)
    return error("could not build the model module");
  TrainingPipelineOptions pipeline;
  pipeline.dModel = config->d_model();
  pipeline.warmup = options.warmup;
  if (mlir::failed(runTrainingPipeline(*module, pipeline)))
    return error("the training pipeline (loom-autodiff, loom-optimizer) "
                 "failed");
  if (mlir::failed(mlir::verify(*module)))
    return error("the compiled module does not verify");

  std::string problem;
  auto out = mlir::openOutputFile(options.output, &problem);
  if (!out)
    return error("cannot write '" + options.output + "': " + problem);
  module->print(out->os());
  out->os() << "\n";
  out->keep();
  return llvm::Error::success();
}

} // namespace

void addCompileCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Build a model, differentiate it, add Adam, emit the result");
  options->model.addTo(cmd);
  cmd->add_option("--emit", options->emit, "What to emit (ir)")
      ->capture_default_str();
  cmd->add_option("-o,--output", options->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup,
                  "Warm-up steps of the learning-rate schedule")
      ->capture_default_str();
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = compile(*options))
      exitCode = fail("compile", std::move(err));
  });
}

} // namespace loom::cli
