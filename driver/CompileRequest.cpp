//===- CompileRequest.cpp - What `loom compile` is asked, as a library ----===//

#include "driver/CompileRequest.h"

#include "abi/CpuFeatures.h"
#include "codegen/cuda/CudaExecutableWriter.h"
#include "frontend/Transformer.h"
#include "frontend/onnx/OnnxImporter.h"
#include "runtime/InputFile.h"

#include "mlir/IR/Verifier.h"

#include <chrono>
#include <cmath>
#include <cstdio>

namespace loom::driver {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Error checkCompileTarget(const CompileRequest &r) {
  if (r.target != "ir" && r.target != "cpu" && r.target != "cuda")
    return error("unknown target '" + r.target +
                 "'; the targets are 'ir' (the compiled module as text), "
                 "'cpu' and 'cuda' (executables)");
  if (!abi::isCpuLevel(r.cpu))
    return error("unknown --cpu '" + r.cpu + "'; the choices are " +
                 abi::cpuLevelList());
  if (r.cpu != abi::kNativeCpuLevel && r.target != "cpu")
    return error("--cpu applies to --target cpu only");
  if (!isCudaArch(r.cudaArch))
    return error("unknown --cuda-arch '" + r.cudaArch + "'; the choices are " +
                 cudaArchList());
  if (r.cudaArch != CudaExecutableOptions().arch && r.target != "cuda")
    return error("--cuda-arch applies to --target cuda only");
  if (r.cudaLayouts && r.target == "cuda")
    return error("--cuda-layouts is for --target cpu or ir: a CUDA "
                 "executable has them already");
  if (r.precision != "fp32" && r.precision != "bf16" && r.precision != "int8")
    return error("unknown --precision '" + r.precision +
                 "'; the choices are fp32, bf16 and int8");
  return llvm::Error::success();
}

llvm::Error checkCompileRequest(const CompileRequest &r) {
  if (llvm::Error err = checkCompileTarget(r))
    return err;
  if (r.warmup <= 0)
    return error("--warmup must be positive, got " + llvm::Twine(r.warmup));
  if (!(r.lrScale > 0) || !std::isfinite(r.lrScale) || !(r.clipNorm >= 0) ||
      !std::isfinite(r.clipNorm))
    return error("--lr-scale must be a positive number and --clip-norm one "
                 "not negative (0: no clipping)");
  if (!(r.bucketMb * (1 << 20) >= 4 && r.bucketMb <= (1 << 20))) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", r.bucketMb);
    return error(llvm::Twine("--bucket-mb must be between 4 bytes and 1 TiB "
                             "(1048576), got ") +
                 given);
  }
  if (r.imported()) {
    if (r.config)
      return error("give an ONNX model or --preset/--config, not both");
    if (Status readable = checkInputFile(r.onnx, "the ONNX model");
        !readable.ok())
      return error(readable.message());
    if (!r.loss.empty() && r.loss != "cross-entropy")
      return error("unknown --loss '" + r.loss +
                   "'; the one loss is 'cross-entropy'");
    if (r.loss.empty() != r.lossOutput.empty())
      return error("--loss and --loss-output go together: the loss, and "
                   "the output of the model it is taken on");
    if (!(r.labelSmoothing >= 0 && r.labelSmoothing < 1))
      return error("--label-smoothing must be in [0, 1)");
    if (!r.loss.empty() && r.dModel <= 0)
      return error("--d-model must be given, positive, with --loss: the "
                   "learning-rate schedule scales by d_model^-0.5");
  } else {
    if (!r.config)
      return error("no model given: pass --preset NAME, --config FILE or "
                   "an ONNX model");
    if (!r.loss.empty() || !r.lossOutput.empty())
      return error("--loss is for an ONNX model; a config's model has its "
                   "own loss");
  }
  for (auto [name, value] : {std::pair{"--max-tokens", r.maxTokens},
                             {"--max-len", r.maxLen},
                             {"--max-batch", r.maxBatch}})
    if (value <= 0)
      return error(llvm::Twine(name) + " must be positive, got " +
                   llvm::Twine(value));
  return llvm::Error::success();
}

CodeTarget codeTargetOf(const CompileRequest &r) {
  CodeTarget target;
  if (r.target == "cuda")
    target.cudaArch = r.cudaArch;
  else
    target.cpu = r.cpu;
  target.precision = r.precision;
  return target;
}

CompilePipelineOptions pipelineOf(const CompileRequest &r) {
  CompilePipelineOptions pipeline;
  pipeline.training.dModel = r.imported() ? r.dModel : r.config->d_model();
  pipeline.training.warmup = r.warmup;
  pipeline.training.lrScale = r.lrScale;
  pipeline.training.clipNorm = r.clipNorm;
  // bf16 is also the training step's precision; int8 is decoding's alone.
  pipeline.training.precision = r.precision == "bf16" ? "bf16" : "fp32";
  pipeline.differentiate = !r.imported() || !r.loss.empty();
  pipeline.maxTokens = r.maxTokens;
  pipeline.maxLen = r.maxLen;
  pipeline.maxBatch = r.maxBatch;
  pipeline.remarks = r.remarks;
  pipeline.training.dataParallel = r.dataParallel;
  pipeline.training.bucketBytes = int64_t(r.bucketMb * (1 << 20));
  // The CPU's attention reads the decoder's position-first caches where
  // they lie (the IR of target "ir" is the CPU's), unless asked for the
  // CUDA executable's steps.
  pipeline.keysPositionMajor = r.target != "cuda" && !r.cudaLayouts;
  // Decoding in bf16 holds the decoder's caches in bf16 on the CPU (with
  // CUDA layouts, loom-cache-precision declines: attention reads them
  // through transposes).
  pipeline.cachePrecision = codeTargetOf(r).cachesIn();
  return pipeline;
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildRequestModule(mlir::MLIRContext &ctx, const CompileRequest &r) {
  if (!r.imported()) {
    auto built = buildModelModule(ctx, *r.config);
    if (!built)
      return error("could not build the model module");
    return std::move(built);
  }
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
  OnnxImportOptions importOptions;
  if (!r.loss.empty())
    importOptions.loss =
        OnnxLoss{r.lossOutput, r.labelSmoothing, r.ignoreIndex};
  llvm::Expected<OnnxImport> done =
      importOnnxFile(*module, r.onnx, importOptions);
  if (!done)
    return done.takeError();
  return std::move(module);
}

llvm::Expected<CompiledRequest> compileRequest(mlir::MLIRContext &ctx,
                                               const CompileRequest &r) {
  if (llvm::Error err = checkCompileRequest(r))
    return std::move(err);
  auto start = std::chrono::steady_clock::now();
  auto built = buildRequestModule(ctx, r);
  if (!built)
    return built.takeError();
  CompiledRequest compiled;
  compiled.module = std::move(*built);
  if (mlir::failed(
          runCompilePipeline(*compiled.module, pipelineOf(r), r.dumpDir)))
    return error("the compile pipeline failed");
  if (mlir::failed(mlir::verify(*compiled.module)))
    return error("the compiled module does not verify");
  compiled.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!r.writesExecutable())
    return std::move(compiled);
  SizeBounds bounds{r.maxTokens, r.maxLen, r.maxBatch};
  auto exe = r.imported() ? writeExecutable(*compiled.module, std::string(),
                                            bounds, codeTargetOf(r))
                          : writeExecutable(*compiled.module, *r.config, bounds,
                                            codeTargetOf(r));
  if (!exe)
    return exe.takeError();
  compiled.executable = std::move(*exe);
  return std::move(compiled);
}

} // namespace loom::driver
