//===- CompileDriver.cpp - From a model to an executable ------------------===//

#include "driver/CompileDriver.h"

#include "codegen/cpu/ExecutableWriter.h"
#include "codegen/cuda/CudaExecutableWriter.h"
#include "frontend/Transformer.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/text_format.h>

namespace loom::driver {

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

std::unique_ptr<mlir::ScopedDiagnosticHandler>
printDiagnostics(mlir::MLIRContext &ctx) {
  ctx.printOpOnDiagnostic(false);
  return std::make_unique<mlir::ScopedDiagnosticHandler>(
      &ctx, [](mlir::Diagnostic &diag) {
        const char *severity = "error";
        switch (diag.getSeverity()) {
        case mlir::DiagnosticSeverity::Remark:
          severity = "remark";
          break;
        case mlir::DiagnosticSeverity::Warning:
          severity = "warning";
          break;
        case mlir::DiagnosticSeverity::Note:
          severity = "note";
          break;
        case mlir::DiagnosticSeverity::Error:
          break;
        }
        llvm::errs() << diag.getLocation() << ": " << severity << ": " << diag
                     << "\n";
        for (mlir::Diagnostic &note : diag.getNotes())
          llvm::errs() << note.getLocation() << ": note: " << note << "\n";
        return mlir::success();
      });
}

CompilePipelineOptions pipelineFor(const TransformerConfig &config,
                                   int64_t maxTokens, int64_t maxLen,
                                   int64_t maxBatch) {
  CompilePipelineOptions pipeline;
  pipeline.training.dModel = config.d_model();
  pipeline.maxTokens = maxTokens;
  pipeline.maxLen = maxLen;
  pipeline.maxBatch = maxBatch;
  return pipeline;
}

CodeTarget codeTargetOf(const runtime::Device &device) {
  CodeTarget target;
  if (device.target() == runtime::Executable::CUDA) {
    target.cudaArch = device.codeTarget();
    if (!isCudaArch(target.cudaArch))
      target.cudaArch = CudaExecutableOptions().arch;
  }
  return target;
}

llvm::Expected<runtime::Executable>
writeExecutable(mlir::ModuleOp planned, const TransformerConfig &config,
                const SizeBounds &bounds, const CodeTarget &target) {
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  return writeExecutable(planned, configText, bounds, target);
}

llvm::Expected<runtime::Executable>
writeExecutable(mlir::ModuleOp planned, const std::string &configText,
                const SizeBounds &bounds, const CodeTarget &target) {
  mlir::FailureOr<runtime::Executable> exe;
  if (target.cuda() && target.precision != "fp32")
    return error("--precision " + target.precision +
                 " is for the CPU; CUDA decoding runs in fp32");
  if (target.cuda()) {
    CudaExecutableOptions options;
    options.bounds = bounds;
    options.configText = configText;
    options.arch = target.cudaArch;
    exe = writeCudaExecutable(planned, options);
    if (mlir::failed(exe))
      return error("CUDA code generation failed");
  } else {
    CpuExecutableOptions options;
    options.bounds = bounds;
    options.configText = configText;
    options.cpu = target.cpu;
    options.linearPrecision = target.precision;
    exe = writeCpuExecutable(planned, options);
    if (mlir::failed(exe))
      return error("CPU code generation failed");
  }
  return std::move(*exe);
}

llvm::Expected<runtime::Executable>
compileModule(mlir::ModuleOp module, const CompilePipelineOptions &pipeline,
              const CodeTarget &target, const std::string &configText,
              llvm::StringRef dumpDir) {
  // The CPU's attention kernel reads the decoder's position-first caches
  // where they lie; the CUDA one takes the transposed copy.
  CompilePipelineOptions forTarget = pipeline;
  forTarget.keysPositionMajor = !target.cuda();
  // Decoding in bf16 holds its caches in bf16 too: the CPU attention kernel
  // reads them and sums in f32.
  forTarget.cachePrecision = target.cachesIn();
  if (target.cuda() && forTarget.cachePrecision != "fp32")
    return error("bf16 decoder caches are for the CPU; CUDA's attention "
                 "reads f32");
  if (target.cuda() && pipeline.training.precision != "fp32")
    return error("--precision " + pipeline.training.precision +
                 " training is built for the CPU only so far; CUDA trains in "
                 "fp32");
  if (mlir::failed(runCompilePipeline(module, forTarget, dumpDir)))
    return error("the compile pipeline failed");
  if (mlir::failed(mlir::verify(module)))
    return error("the compiled module does not verify");
  return writeExecutable(
      module, configText,
      {pipeline.maxTokens, pipeline.maxLen, pipeline.maxBatch}, target);
}

llvm::Expected<runtime::Executable>
compileExecutable(const TransformerConfig &config,
                  const CompilePipelineOptions &pipeline,
                  const CodeTarget &target, llvm::StringRef dumpDir) {
  mlir::MLIRContext ctx;
  auto printer = printDiagnostics(ctx);
  auto module = buildModelModule(ctx, config);
  if (!module)
    return error("could not build the model module");
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  return compileModule(*module, pipeline, target, configText, dumpDir);
}

llvm::Expected<runtime::Executable>
compileCpuExecutable(const TransformerConfig &config,
                     const CompilePipelineOptions &pipeline,
                     llvm::StringRef dumpDir, llvm::StringRef cpu) {
  CodeTarget target;
  target.cpu = cpu.str();
  return compileExecutable(config, pipeline, target, dumpDir);
}

} // namespace loom::driver
