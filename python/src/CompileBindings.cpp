//===- CompileBindings.cpp - What the module does with the compiler -------===//
//
// loom.compile (driver/CompileRequest.h, `loom compile`'s library), training
// a model that is compiled first (`loom train`'s CompilingSource), and a
// model directory's translator for a precision its folder does not hold yet
// (`loom translate --model DIR --precision P`: compiled once, kept in DIR).
// The compiler's diagnostics go to stderr with their locations, as the
// commands print them; a failure raises loom.errors.CompileError.
//
//===----------------------------------------------------------------------===//

#include "python/src/Bindings.h"

#include "python/src/Errors.h"
#include "python/src/TrainJob.h"

#include "driver/CompileRequest.h"
#include "runtime/Executable.h"
#include "tools/loom/ModelDir.h"
#include "tools/loom/TrainingProgram.h"

#include "mlir/IR/MLIRContext.h"

#include <pybind11/stl.h>

#include <cmath>

namespace py = pybind11;

namespace loom::python {

namespace {

/// Raises CompileError with `err`'s message.
[[noreturn]] void raiseCompileError(llvm::Error err) {
  raise("CompileError", llvm::toString(std::move(err)));
}

/// The config `preset` or `config` (a .pbtxt file) names; exactly one.
TransformerConfig modelConfig(const std::string &preset,
                              const std::string &config) {
  if (preset.empty() == config.empty())
    invalid("give a preset or a config file, one of them");
  auto loaded = preset.empty() ? loadConfig(config) : presetConfig(preset);
  if (!loaded)
    raiseCompileError(loaded.takeError());
  return std::move(*loaded);
}

py::bytes compile(std::string preset, std::string config, std::string onnx,
                  std::string target, std::string cpu, std::string cudaArch,
                  std::string precision, int64_t maxTokens, int64_t maxLen,
                  int64_t maxBatch, int64_t warmup, double lrScale,
                  double clipNorm, std::string loss, std::string lossOutput,
                  double labelSmoothing, int64_t dModel, bool dataParallel,
                  std::string dumpDir) {
  driver::CompileRequest request;
  if (onnx.empty()) {
    request.config = modelConfig(preset, config);
  } else {
    if (!preset.empty() || !config.empty())
      invalid("give an ONNX model or a preset/config, not both");
    request.onnx = onnx;
  }
  if (target == "ir")
    invalid("target must be 'cpu' or 'cuda': loom.compile returns an "
            "executable (`loom compile --target ir` prints the IR)");
  request.target = target;
  request.cpu = cpu;
  request.cudaArch = cudaArch;
  request.precision = precision;
  request.maxTokens = maxTokens;
  request.maxLen = maxLen;
  request.maxBatch = maxBatch;
  request.warmup = warmup;
  request.lrScale = lrScale;
  request.clipNorm = clipNorm;
  request.loss = loss;
  request.lossOutput = lossOutput;
  request.labelSmoothing = labelSmoothing;
  request.dModel = dModel;
  request.dataParallel = dataParallel;
  request.dumpDir = dumpDir;
  if (llvm::Error err = driver::checkCompileRequest(request))
    raiseCompileError(std::move(err));
  auto compiled = withoutGil([&]() -> llvm::Expected<std::string> {
    mlir::MLIRContext ctx;
    ctx.printOpOnDiagnostic(false);
    auto printer = driver::printDiagnostics(ctx);
    auto done = driver::compileRequest(ctx, request);
    if (!done)
      return done.takeError();
    return executableFileBytes(done->executable->SerializeAsString());
  });
  if (!compiled)
    raiseCompileError(compiled.takeError());
  return py::bytes(*compiled);
}

/// Trains a model compiled here, as `loom train` does.
py::dict trainCompiling(std::string preset, std::string config,
                        int64_t vocabSize, double bucketMb, py::object callback,
                        py::kwargs args) {
  train::JobOptions job = jobOptionsFrom(std::move(args));
  cli::ModelOptions model;
  model.preset = preset;
  model.configPath = config;
  if (job.resume && (!preset.empty() || !config.empty()))
    invalid("resume takes the model from '" + job.dir +
            "/config.pbtxt'; leave out preset and config");
  if (!job.resume && preset.empty() == config.empty())
    invalid("give a preset or a config file, one of them (or resume)");
  // `loom train`'s own checks (its flags' names in the messages).
  if (llvm::Error err =
          cli::checkCompiledSettings(job.settings, vocabSize, bucketMb))
    invalid(llvm::toString(std::move(err)));
  cli::CompilingSource source(model, job.train, vocabSize, bucketMb);
  return runTrainJob(std::move(job), source, std::move(callback));
}

} // namespace

void bindCompiler(py::module_ &m) {
  m.def("_compile", &compile, py::arg("preset"), py::arg("config"),
        py::arg("onnx"), py::arg("target"), py::arg("cpu"),
        py::arg("cuda_arch"), py::arg("precision"), py::arg("max_tokens"),
        py::arg("max_len"), py::arg("max_batch"), py::arg("warmup"),
        py::arg("lr_scale"), py::arg("clip_norm"), py::arg("loss"),
        py::arg("loss_output"), py::arg("label_smoothing"), py::arg("d_model"),
        py::arg("data_parallel"), py::arg("dump_dir"),
        "loom.compile's work: the executable's bytes.");
  m.def("_train_compiling", &trainCompiling, py::arg("preset"),
        py::arg("config"), py::arg("vocab_size"), py::arg("bucket_mb"),
        py::arg("callback"), "loom.train with a preset or config.");
  m.def(
      "_open_model_translator",
      [](const std::string &dir, const std::string &precision,
         py::object device, py::object threads, int workers,
         py::object weights) {
        TranslatorOptions opening;
        opening.threads = threads.is_none() ? 0 : threads.cast<int>();
        opening.workers = workers;
        if (!device.is_none())
          opening.device = device.cast<std::string>();
        if (!weights.is_none())
          opening.weights = weights.cast<std::string>();
        auto opened = withoutGil([&] {
          return cli::openModelTranslator(dir, opening, precision,
                                          "loom.Translator");
        });
        if (!opened)
          raiseCompileError(opened.takeError());
        return TranslatorHandle{std::move(*opened)};
      },
      py::arg("dir"), py::arg("precision"), py::arg("device"),
      py::arg("threads"), py::arg("workers"), py::arg("weights"),
      "A model directory's translator for `precision`, compiled when the "
      "directory holds none that is current.");
}

} // namespace loom::python
