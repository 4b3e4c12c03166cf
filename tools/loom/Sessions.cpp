//===- CpuBackend.cpp - Compiling and loading models for the CPU ----------===//

#include "tools/loom/CpuBackend.h"
#include "tools/loom/Common.h"

#include "codegen/cpu/ExecutableWriter.h"
#include "codegen/cuda/CudaExecutableWriter.h"
#include "frontend/Transformer.h"
#include "runtime/Weights.h"
#include "runtime/cpu/CpuDevice.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/text_format.h>

#include <cstring>
#include <random>

namespace loom::cli {

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

llvm::Expected<runtime::Executable>
compileCpuExecutable(const TransformerConfig &config,
                     const CompilePipelineOptions &pipeline,
                     llvm::StringRef dumpDir, llvm::StringRef cpu) {
  CodeTarget target;
  target.cpu = cpu.str();
  return compileExecutable(config, pipeline, target, dumpDir);
}

llvm::Expected<std::unique_ptr<runtime::Session>>
loadCpuSession(runtime::Executable exe, int threads) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program)
    return toError(program.status());
  auto device = runtime::openDevice("cpu", threads);
  if (!device)
    return toError(device.status());
  return toExpected(runtime::Session::create(*program, *device));
}

int cpuThreads(runtime::Session &session) {
  if (session.device().target() != runtime::Executable::CPU)
    return 0;
  return static_cast<cpu::CpuDevice &>(session.device()).threads();
}

llvm::Expected<std::shared_ptr<runtime::Device>>
openCommandDevice(const std::string &kind, int threads) {
  auto device = runtime::openDevice(kind, threads);
  if (!device)
    return error("--device " + kind + ": " + device.error());
  return std::move(*device);
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
compileExecutable(const TransformerConfig &config,
                  const CompilePipelineOptions &pipeline,
                  const CodeTarget &target, llvm::StringRef dumpDir) {
  mlir::MLIRContext ctx;
  auto printer = printDiagnostics(ctx);
  auto module = buildModelModule(ctx, config);
  if (!module)
    return error("could not build the model module");
  // The CPU's attention kernel reads the decoder's position-first caches
  // where they lie; the CUDA one takes the transposed copy.
  CompilePipelineOptions forTarget = pipeline;
  forTarget.keysPositionMajor = !target.cuda();
  if (mlir::failed(runCompilePipeline(*module, forTarget, dumpDir)))
    return error("the compile pipeline failed");
  if (mlir::failed(mlir::verify(*module)))
    return error("the compiled module does not verify");
  return writeExecutable(
      *module, config, {pipeline.maxTokens, pipeline.maxLen, pipeline.maxBatch},
      target);
}

llvm::Expected<std::unique_ptr<runtime::Session>>
loadSession(runtime::Executable exe, std::shared_ptr<runtime::Device> device) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program)
    return toError(program.status());
  return toExpected(runtime::Session::create(*program, std::move(device)));
}

llvm::Error initParameters(runtime::Session &session, uint64_t seed) {
  return toError(runtime::initParameters(session, seed));
}

llvm::Error loadParameters(runtime::Session &session, const std::string &path) {
  return toError(runtime::loadParametersFile(session, path));
}

llvm::Expected<double> runTrainStep(runtime::Session &session,
                                    const runtime::Tensor &src,
                                    const runtime::Tensor &tgt, int64_t seed,
                                    int64_t step) {
  return toExpected(
      runtime::runTrainStep(session, src.ref(), tgt.ref(), seed, step));
}

llvm::Expected<runtime::Tensor>
idsTensor(const std::vector<std::vector<int64_t>> &rows) {
  return toExpected(runtime::idsTensor(rows));
}

llvm::Expected<runtime::Tensor> scalarTensor(DType dtype, double value) {
  return toExpected(runtime::scalarTensor(dtype, value));
}

} // namespace loom::cli
