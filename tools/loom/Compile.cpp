//===- Compile.cpp - `loom compile` ---------------------------------------===//
//
// Builds the model module of a config and runs the whole pipeline on it
// (passes/Pipeline.h): fusion, `@loss_grad` (loom-autodiff), `@train_step`
// (loom-optimizer), elementwise fusion, memory planning. It verifies and
// prints the result, which parses back with `loom-opt`; `--dump-dir` keeps
// the module after every stage and `--report` writes the figures of each
// entry point as JSON. `--target cpu -o M.loomx` writes an executable
// instead: generated kernels for every loom.fusion and library calls for the
// rest (codegen/common/ExecutableBuilder.h), compiled for the CPU `--cpu`
// names: this machine (native) or a portable x86-64 level. `--target cuda`
// writes the same executable with GPU kernels for `--cuda-arch`
// (codegen/cuda/CudaExecutableWriter.h).
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/Report.h"
#include "tools/loom/Sessions.h"

#include "abi/CpuFeatures.h"
#include "codegen/cpu/ExecutableWriter.h"
#include "codegen/cuda/CudaExecutableWriter.h"
#include "runtime/Executable.h"

#include "frontend/Transformer.h"
#include "frontend/onnx/OnnxImporter.h"
#include "passes/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include <google/protobuf/text_format.h>

#include <chrono>
#include <cmath>
#include <memory>

namespace loom::cli {

namespace {

struct CompileOptions {
  ModelOptions model;
  /// An ONNX model to import instead of building one from a config, and
  /// the loss to train it with (none: compiled for inference).
  std::string onnx;
  std::string loss;
  std::string lossOutput;
  double labelSmoothing = 0.0;
  int64_t ignoreIndex = -100;
  int64_t dModel = 0;
  std::string emit = "ir";
  std::string target = "ir";
  std::string cpu = "native";
  std::string cudaArch = "sm_90";
  bool cudaLayouts = false;
  std::string precision = "fp32";
  std::string output = "-";
  int64_t warmup = 4000;
  double lrScale = 1.0;
  double clipNorm = 0.0;
  std::string dumpDir;
  std::string report;
  int64_t maxTokens = 4096;
  int64_t maxLen = 256;
  int64_t maxBatch = 256;
  bool remarks = false;
  bool dataParallel = false;
  double bucketMb = 25;
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

llvm::Error compile(const CompileOptions &options) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (options.target != "ir" && options.target != "cpu" &&
      options.target != "cuda")
    return error("unknown target '" + options.target +
                 "'; the targets are 'ir' (the compiled module as text), "
                 "'cpu' and 'cuda' (executables)");
  if (options.target != "ir" && options.output == "-")
    return error("--target " + options.target +
                 " writes a binary executable: give it a file with -o");
  if (options.output != "-")
    if (llvm::Error err =
            checkOutputFile(options.output, "--output",
                            {options.model.configPath, options.onnx}))
      return err;
  if (!options.report.empty())
    if (llvm::Error err =
            checkOutputFile(options.report, "--report",
                            {options.model.configPath, options.onnx,
                             options.output == "-" ? "" : options.output}))
      return err;
  // Checked before the pipeline runs, which takes a while.
  if (!abi::isCpuLevel(options.cpu))
    return error("unknown --cpu '" + options.cpu + "'; the choices are " +
                 abi::cpuLevelList());
  if (options.cpu != abi::kNativeCpuLevel && options.target != "cpu")
    return error("--cpu applies to --target cpu only");
  if (!isCudaArch(options.cudaArch))
    return error("unknown --cuda-arch '" + options.cudaArch +
                 "'; the choices are " + cudaArchList());
  if (options.cudaArch != CudaExecutableOptions().arch &&
      options.target != "cuda")
    return error("--cuda-arch applies to --target cuda only");
  if (options.cudaLayouts && options.target == "cuda")
    return error("--cuda-layouts is for --target cpu or ir: a CUDA "
                 "executable has them already");
  if (options.emit != "ir")
    return error("cannot emit '" + options.emit +
                 "' yet; the only output so far is --emit ir");
  if (options.warmup <= 0)
    return error("--warmup must be positive, got " +
                 llvm::Twine(options.warmup));
  if (!(options.lrScale > 0) || !std::isfinite(options.lrScale) ||
      !(options.clipNorm >= 0) || !std::isfinite(options.clipNorm))
    return error("--lr-scale must be a positive number and --clip-norm one "
                 "not negative (0: no clipping)");
  llvm::Expected<int64_t> bucket = bucketBytes(options.bucketMb);
  if (!bucket)
    return bucket.takeError();
  // A config builds Loom's own Transformer; an ONNX model is imported as
  // @forward and compiled for inference (it has no loss to differentiate).
  bool imported = !options.onnx.empty();
  TransformerConfig config;
  if (imported) {
    if (!options.model.preset.empty() || !options.model.configPath.empty())
      return error("give an ONNX model or --preset/--config, not both");
    if (llvm::Error err = checkInputFile(options.onnx, "the ONNX model"))
      return err;
    if (!options.loss.empty() && options.loss != "cross-entropy")
      return error("unknown --loss '" + options.loss +
                   "'; the one loss is 'cross-entropy'");
    if (options.loss.empty() != options.lossOutput.empty())
      return error("--loss and --loss-output go together: the loss, and "
                   "the output of the model it is taken on");
    if (!(options.labelSmoothing >= 0 && options.labelSmoothing < 1))
      return error("--label-smoothing must be in [0, 1)");
    if (!options.loss.empty() && options.dModel <= 0)
      return error("--d-model must be given, positive, with --loss: the "
                   "learning-rate schedule scales by d_model^-0.5");
  } else {
    if (!options.loss.empty() || !options.lossOutput.empty())
      return error("--loss is for an ONNX model; a config's model has its "
                   "own loss");
    auto loaded = options.model.load();
    if (!loaded)
      return loaded.takeError();
    config = std::move(*loaded);
  }

  for (auto [name, value] : {std::pair{"--max-tokens", options.maxTokens},
                             {"--max-len", options.maxLen},
                             {"--max-batch", options.maxBatch}})
    if (value <= 0)
      return error(llvm::Twine(name) + " must be positive, got " +
                   llvm::Twine(value));

  CompilePipelineOptions pipeline;
  pipeline.training.dModel = imported ? options.dModel : config.d_model();
  pipeline.training.warmup = options.warmup;
  pipeline.training.lrScale = options.lrScale;
  pipeline.training.clipNorm = options.clipNorm;
  // bf16 is also the training step's precision; int8 is decoding's alone.
  pipeline.training.precision = options.precision == "bf16" ? "bf16" : "fp32";
  pipeline.differentiate = !imported || !options.loss.empty();
  pipeline.maxTokens = options.maxTokens;
  pipeline.maxLen = options.maxLen;
  pipeline.maxBatch = options.maxBatch;
  pipeline.remarks = options.remarks;
  pipeline.training.dataParallel = options.dataParallel;
  pipeline.training.bucketBytes = *bucket;
  // The CPU's attention reads the decoder's position-first caches where
  // they lie (the IR printed with --target ir is the CPU's), unless asked
  // for the CUDA executable's steps.
  pipeline.keysPositionMajor = options.target != "cuda" && !options.cudaLayouts;
  // What the code is for. Decoding in bf16 holds the decoder's caches in
  // bf16 on the CPU (with --cuda-layouts, loom-cache-precision declines:
  // attention reads them through transposes).
  CodeTarget target;
  if (options.target == "cuda")
    target.cudaArch = options.cudaArch;
  else
    target.cpu = options.cpu;
  target.precision = options.precision;
  pipeline.cachePrecision = target.cachesIn();

  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  // Every diagnostic, remarks of the fusion passes included, goes to stderr
  // with its location (the model scope that built the op).
  auto printer = printDiagnostics(ctx);
  auto start = std::chrono::steady_clock::now();
  // The model's module, built or imported, with nothing compiled yet.
  auto buildModule =
      [&]() -> llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> {
    if (!imported) {
      auto built = buildModelModule(ctx, config);
      if (!built)
        return error("could not build the model module");
      return std::move(built);
    }
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
    OnnxImportOptions importOptions;
    if (!options.loss.empty())
      importOptions.loss = OnnxLoss{options.lossOutput, options.labelSmoothing,
                                    options.ignoreIndex};
    llvm::Expected<OnnxImport> done =
        importOnnxFile(*module, options.onnx, importOptions);
    if (!done)
      return done.takeError();
    return std::move(module);
  };
  auto built = buildModule();
  if (!built)
    return built.takeError();
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*built);
  if (mlir::failed(runCompilePipeline(*module, pipeline, options.dumpDir)))
    return error("the compile pipeline failed");
  if (mlir::failed(mlir::verify(*module)))
    return error("the compiled module does not verify");
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  if (!options.report.empty()) {
    // The counts before fusion come from the same model compiled without it.
    auto unfused = buildModule();
    if (!unfused)
      return unfused.takeError();
    CompilePipelineOptions plain = pipeline;
    plain.fuse = false;
    plain.planMemory = false;
    if (mlir::failed(runCompilePipeline(**unfused, plain)))
      return error("the unfused pipeline for the report failed");
    nlohmann::json report;
    report["compile_seconds"] = seconds;
    report["max_tokens"] = options.maxTokens;
    report["max_len"] = options.maxLen;
    report["max_batch"] = options.maxBatch;
    report["entry_points"] = buildCompileReport(**unfused, *module);
    if (llvm::Error err = writeText(options.report, report.dump(2) + "\n"))
      return err;
  }

  if (options.target != "ir") {
    SizeBounds bounds{options.maxTokens, options.maxLen, options.maxBatch};
    auto exe = imported
                   ? writeExecutable(*module, std::string(), bounds, target)
                   : writeExecutable(*module, config, bounds, target);
    if (!exe)
      return exe.takeError();
    return toError(saveExecutable(options.output, *exe));
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
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
  cmd->add_option("onnx", options->onnx,
                  "An ONNX model (.onnx) to import and compile, instead of "
                  "--preset or --config: for inference, or with --loss for "
                  "training");
  cmd->add_option("--loss", options->loss,
                  "With an ONNX model: train it with this loss "
                  "(cross-entropy), which builds @loss, @loss_grad and "
                  "@train_step");
  cmd->add_option("--loss-output", options->lossOutput,
                  "With --loss: the model's output [..., classes] it is "
                  "taken on; the targets are a new input, 'targets'");
  cmd->add_option("--label-smoothing", options->labelSmoothing,
                  "With --loss: label smoothing, as cross_entropy's")
      ->capture_default_str();
  cmd->add_option("--ignore-index", options->ignoreIndex,
                  "With --loss: the target that does not count")
      ->capture_default_str();
  cmd->add_option("--d-model", options->dModel,
                  "With --loss: the d_model of the learning-rate schedule "
                  "(lr = d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5))");
  cmd->add_option("--emit", options->emit, "What to emit (ir)")
      ->capture_default_str();
  cmd->add_option("--target", options->target,
                  "ir: the compiled module as MLIR text; cpu: an executable "
                  "for the CPU --cpu names; cuda: an executable for the GPU "
                  "--cuda-arch names")
      ->capture_default_str();
  addPrecisionOption(cmd, options->precision);
  cmd->add_option("--cpu", options->cpu,
                  "With --target cpu: the CPU to generate code for. native: "
                  "this machine (its code may not run on older CPUs); "
                  "x86-64-v2, x86-64-v3 (AVX2), x86-64-v4 (AVX-512): every "
                  "CPU of that level")
      ->capture_default_str();
  cmd->add_option("--cuda-arch", options->cudaArch,
                  "With --target cuda: the GPU architecture of the cubin "
                  "(sm_80: A100, sm_86/sm_89: Ampere/Ada cards, sm_90: H100); "
                  "its PTX runs on later GPUs too")
      ->capture_default_str();
  cmd->add_flag("--cuda-layouts", options->cudaLayouts,
               "With --target cpu or ir: keep the layouts a CUDA executable "
               "has (the decoder's key caches transposed, not read position "
               "first), so that the CPU executable runs the CUDA one's steps "
               "one for one (a GPU's kernels checked against the CPU's, step "
               "by step); decoding is a little slower");
  cmd->add_option("-o,--output", options->output, "Output file ('-': stdout)")
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup,
                  "Warm-up steps of the learning-rate schedule")
      ->capture_default_str();
  cmd->add_option("--lr-scale", options->lrScale,
                  "lr = scale * d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5)")
      ->capture_default_str();
  cmd->add_option("--clip-norm", options->clipNorm,
                  "Clip the global gradient norm (0: no clipping)")
      ->capture_default_str();
  cmd->add_option("--dump-dir", options->dumpDir,
                  "Write the module after every pass, numbered, into DIR");
  cmd->add_option("--report", options->report,
                  "Write op counts and memory figures per entry point (JSON)");
  cmd->add_option("--max-tokens", options->maxTokens,
                  "Most tokens (batch x length) a batch holds; plans memory")
      ->capture_default_str();
  cmd->add_option("--max-len", options->maxLen,
                  "Longest sentence; plans memory")
      ->capture_default_str();
  cmd->add_option("--max-batch", options->maxBatch,
                  "Most sentences in a batch; plans memory")
      ->capture_default_str();
  cmd->add_flag("--data-parallel", options->dataParallel,
                "Train as one rank of a data-parallel job: gradients "
                "averaged across ranks (loom-data-parallel)");
  cmd->add_option("--bucket-mb", options->bucketMb,
                  "With --data-parallel: MiB of gradients per all-reduce")
      ->default_val(25);
  cmd->add_flag("--remarks", options->remarks,
                "Explain, on stderr, each fusion candidate that was declined");
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = compile(*options))
      exitCode = fail("compile", std::move(err));
  });
}

} // namespace loom::cli
