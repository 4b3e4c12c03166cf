//===- Compile.cpp - `loom compile` ---------------------------------------===//
//
// Builds the model module of a config (or imports an ONNX file) and runs
// the whole pipeline on it (passes/Pipeline.h, through
// driver/CompileRequest.h, which the Python module's loom.compile shares):
// fusion, `@loss_grad` (loom-autodiff), `@train_step` (loom-optimizer),
// elementwise fusion, memory planning. It verifies and prints the result, which
// parses back with `loom-opt`; `--dump-dir` keeps the module after every stage
// and `--report` writes the figures of each entry point as JSON. `--target cpu
// -o M.loomx` writes an executable instead: generated kernels for every
// loom.fusion and library calls for the rest
// (codegen/common/ExecutableBuilder.h), compiled for the CPU `--cpu` names:
// this machine (native) or a portable x86-64 level. `--target cuda` writes the
// same executable with GPU kernels for `--cuda-arch`
// (codegen/cuda/CudaExecutableWriter.h).
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/Report.h"
#include "tools/loom/Sessions.h"

#include "driver/CompileRequest.h"
#include "passes/Pipeline.h"
#include "runtime/Executable.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>

namespace loom::cli {

namespace {

/// `loom compile`'s flags: the request (driver/CompileRequest.h) and where
/// its output goes.
struct CompileOptions {
  CompileOptions() { request.target = "ir"; }
  ModelOptions model;
  driver::CompileRequest request;
  std::string emit = "ir";
  std::string output = "-";
  std::string report;
};

llvm::Error writeText(const std::string &path, const std::string &text) {
  std::string problem;
  auto out = mlir::openOutputFile(path, &problem);
  if (!out)
    return llvm::createStringError("cannot write '" + path + "': " + problem);
  out->os() << text;
  out->keep();
  return llvm::Error::success();
}

llvm::Error compile(CompileOptions &options) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  driver::CompileRequest &request = options.request;
  if (llvm::Error err = driver::checkCompileTarget(request))
    return err;
  if (request.target != "ir" && options.output == "-")
    return error("--target " + request.target +
                 " writes a binary executable: give it a file with -o");
  if (options.output != "-")
    if (llvm::Error err =
            checkOutputFile(options.output, "--output",
                            {options.model.configPath, request.onnx}))
      return err;
  if (!options.report.empty())
    if (llvm::Error err =
            checkOutputFile(options.report, "--report",
                            {options.model.configPath, request.onnx,
                             options.output == "-" ? "" : options.output}))
      return err;
  if (options.emit != "ir")
    return error("cannot emit '" + options.emit +
                 "' yet; the only output so far is --emit ir");
  // A config builds Loom's own Transformer; an ONNX model is imported as
  // @forward and compiled for inference (it has no loss to differentiate).
  if (request.imported()) {
    if (!options.model.preset.empty() || !options.model.configPath.empty())
      return error("give an ONNX model or --preset/--config, not both");
  } else {
    auto loaded = options.model.load();
    if (!loaded)
      return loaded.takeError();
    request.config = std::move(*loaded);
  }
  // Checked before the pipeline runs, which takes a while.
  if (llvm::Error err = driver::checkCompileRequest(request))
    return err;

  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  // Every diagnostic, remarks of the fusion passes included, goes to stderr
  // with its location (the model scope that built the op).
  auto printer = printDiagnostics(ctx);
  auto compiled = driver::compileRequest(ctx, request);
  if (!compiled)
    return compiled.takeError();

  if (!options.report.empty()) {
    // The counts before fusion come from the same model compiled without it.
    auto unfused = driver::buildRequestModule(ctx, request);
    if (!unfused)
      return unfused.takeError();
    CompilePipelineOptions plain = driver::pipelineOf(request);
    plain.fuse = false;
    plain.planMemory = false;
    if (mlir::failed(runCompilePipeline(**unfused, plain)))
      return error("the unfused pipeline for the report failed");
    nlohmann::json report;
    report["compile_seconds"] = compiled->seconds;
    report["max_tokens"] = request.maxTokens;
    report["max_len"] = request.maxLen;
    report["max_batch"] = request.maxBatch;
    report["entry_points"] = buildCompileReport(**unfused, *compiled->module);
    if (llvm::Error err = writeText(options.report, report.dump(2) + "\n"))
      return err;
  }

  if (compiled->executable)
    return toError(saveExecutable(options.output, *compiled->executable));

  std::string text;
  llvm::raw_string_ostream os(text);
  compiled->module->print(os);
  os << "\n";
  return writeText(options.output, text);
}

} // namespace

void addCompileCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile", "Build a model, differentiate it, add Adam, emit the result "
                 "(or import an ONNX model and compile it for inference)");
  options->model.addTo(cmd);
  cmd->add_option("onnx", options->request.onnx,
                  "An ONNX model (.onnx) to import and compile, instead of "
                  "--preset or --config: for inference, or with --loss for "
                  "training");
  cmd->add_option("--loss", options->request.loss,
                  "With an ONNX model: train it with this loss "
                  "(cross-entropy), which builds @loss, @loss_grad and "
                  "@train_step");
  cmd->add_option("--loss-output", options->request.lossOutput,
                  "With --loss: the model's output [..., classes] it is "
                  "taken on; the targets are a new input, 'targets'");
  cmd->add_option("--label-smoothing", options->request.labelSmoothing,
                  "With --loss: label smoothing, as cross_entropy's")
      ->capture_default_str();
  cmd->add_option("--ignore-index", options->request.ignoreIndex,
                  "With --loss: the target that does not count")
      ->capture_default_str();
  cmd->add_option("--d-model", options->request.dModel,
                  "With --loss: the d_model of the learning-rate schedule "
                  "(lr = d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5))");
  cmd->add_option("--emit", options->emit, "What to emit (ir)")
      ->capture_default_str();
  cmd->add_option("--target", options->request.target,
                  "ir: the compiled module as MLIR text; cpu: an executable "
                  "for the CPU --cpu names; cuda: an executable for the GPU "
                  "--cuda-arch names")
      ->capture_default_str();
  addPrecisionOption(cmd, options->request.precision);
  cmd->add_option("--cpu", options->request.cpu,
                  "With --target cpu: the CPU to generate code for. native: "
                  "this machine (its code may not run on older CPUs); "
                  "x86-64-v2, x86-64-v3 (AVX2), x86-64-v4 (AVX-512): every "
                  "CPU of that level")
      ->capture_default_str();
  cmd->add_option("--cuda-arch", options->request.cudaArch,
                  "With --target cuda: the GPU architecture of the cubin "
                  "(sm_80: A100, sm_86/sm_89: Ampere/Ada cards, sm_90: H100); "
                  "its PTX runs on later GPUs too")
      ->capture_default_str();
  cmd->add_flag("--cuda-layouts", options->request.cudaLayouts,
                "With --target cpu or ir: keep the layouts a CUDA executable "
                "has (the decoder's key caches transposed, not read position "
                "first), so that the CPU executable runs the CUDA one's steps "
                "one for one (a GPU's kernels checked against the CPU's, step "
                "by step); decoding is a little slower");
  cmd->add_option("-o,--output", options->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->add_option("--warmup", options->request.warmup,
                  "Warm-up steps of the learning-rate schedule")
      ->capture_default_str();
  cmd->add_option("--lr-scale", options->request.lrScale,
                  "lr = scale * d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5)")
      ->capture_default_str();
  cmd->add_option("--clip-norm", options->request.clipNorm,
                  "Clip the global gradient norm (0: no clipping)")
      ->capture_default_str();
  cmd->add_option("--dump-dir", options->request.dumpDir,
                  "Write the module after every pass, numbered, into DIR");
  cmd->add_option("--report", options->report,
                  "Write op counts and memory figures per entry point (JSON)");
  cmd->add_option("--max-tokens", options->request.maxTokens,
                  "Most tokens (batch x length) a batch holds; plans memory")
      ->capture_default_str();
  cmd->add_option("--max-len", options->request.maxLen,
                  "Longest sentence; plans memory")
      ->capture_default_str();
  cmd->add_option("--max-batch", options->request.maxBatch,
                  "Most sentences in a batch; plans memory")
      ->capture_default_str();
  cmd->add_flag("--data-parallel", options->request.dataParallel,
                "Train as one rank of a data-parallel job: gradients "
                "averaged across ranks (loom-data-parallel)");
  cmd->add_option("--bucket-mb", options->request.bucketMb,
                  "With --data-parallel: MiB of gradients per all-reduce")
      ->default_val(25);
  cmd->add_flag("--remarks", options->request.remarks,
                "Explain, on stderr, each fusion candidate that was declined");
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = compile(*options))
      exitCode = fail("compile", std::move(err));
  });
}

} // namespace loom::cli
