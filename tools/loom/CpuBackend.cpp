//===- CpuBackend.cpp - Compiling and loading models for the CPU ----------===//

#include "tools/loom/CpuBackend.h"
#include "tools/loom/Common.h"

#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Transformer.h"

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
                     llvm::StringRef dumpDir) {
  mlir::MLIRContext ctx;
  auto printer = printDiagnostics(ctx);
  auto module = buildModelModule(ctx, config);
  if (!module)
    return error("could not build the model module");
  if (mlir::failed(runCompilePipeline(*module, pipeline, dumpDir)))
    return error("the compile pipeline failed");
  if (mlir::failed(mlir::verify(*module)))
    return error("the compiled module does not verify");
  CpuExecutableOptions options;
  options.bounds = {pipeline.maxTokens, pipeline.maxLen, pipeline.maxBatch};
  google::protobuf::TextFormat::PrintToString(config, &options.configText);
  mlir::FailureOr<runtime::Executable> exe =
      writeCpuExecutable(*module, options);
  if (mlir::failed(exe))
    return error("CPU code generation failed");
  return std::move(*exe);
}

llvm::Expected<std::unique_ptr<cpu::CpuModel>>
loadCpuModel(runtime::Executable exe, int threads) {
  auto model = cpu::CpuModel::create(std::move(exe), threads);
  if (!model)
    return error(model.error());
  return std::move(*model);
}

llvm::Error bindParameters(cpu::CpuModel &model, const NamedTensors &weights) {
  // Optimizer state starts at zero; every parameter must be given.
  for (const std::string &name : model.parameterNames()) {
    cpu::Tensor *state = model.state(name);
    if (state->dtype() != runtime::Buffer::F32)
      return error("parameter '" + name + "' is not f32");
    auto it = weights.find(name);
    if (it == weights.end())
      return error("no weights for parameter '" + name + "'");
    if (it->second.shape != state->shape())
      return error("weights for '" + name + "' have the wrong shape");
    float *out = state->f32();
    for (int64_t i = 0; i < state->numel(); ++i)
      out[i] = static_cast<float>(it->second.data[i]);
  }
  return llvm::Error::success();
}

void initParameters(cpu::CpuModel &model, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // parameterNames() is sorted, as initialParameters' map is.
  for (const std::string &name : model.parameterNames()) {
    cpu::Tensor *state = model.state(name);
    drawInitialParameter(name, state->shape(), rng, state->f32());
  }
}

llvm::Error loadParameters(cpu::CpuModel &model, const std::string &path) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string &name : model.parameterNames())
    shapes[name] = model.state(name)->shape();
  auto weights = loadWeights(path, shapes);
  if (!weights)
    return weights.takeError();
  return bindParameters(model, *weights);
}

llvm::Expected<double> runTrainStep(cpu::CpuModel &model,
                                    const cpu::Tensor &src,
                                    const cpu::Tensor &tgt, int64_t seed,
                                    int64_t step) {
  cpu::Tensor seedT(runtime::Buffer::I64, {}), stepT(runtime::Buffer::I64, {});
  *static_cast<int64_t *>(seedT.data()) = seed;
  *static_cast<int64_t *>(stepT.data()) = step;
  std::vector<cpu::TensorRef> inputs;
  for (const std::string &name : model.inputNames("train_step")) {
    if (name == "src")
      inputs.push_back(src.ref());
    else if (name == "tgt")
      inputs.push_back(tgt.ref());
    else if (name == "seed")
      inputs.push_back(seedT.ref());
    else if (name == "step")
      inputs.push_back(stepT.ref());
    else
      return error("@train_step takes an unknown input '" + name + "'");
  }
  auto out = model.run("train_step", inputs);
  if (!out)
    return error(out.error());
  for (const cpu::NamedTensor &t : *out)
    if (t.name == "loss")
      return double(t.tensor.f32()[0]);
  return error("@train_step returns no loss");
}

cpu::Tensor idsTensor(const std::vector<std::vector<int64_t>> &rows) {
  size_t width = 0;
  for (const auto &row : rows)
    width = std::max(width, row.size());
  cpu::Tensor ids(runtime::Buffer::I32, {static_cast<int64_t>(rows.size()),
                                         static_cast<int64_t>(width)});
  auto *out = static_cast<int32_t *>(ids.data());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < rows[r].size(); ++t)
      out[r * width + t] = static_cast<int32_t>(rows[r][t]);
  return ids;
}

cpu::Tensor scalarTensor(cpu::DType dtype, double value) {
  cpu::Tensor t(dtype, {});
  switch (dtype) {
  case runtime::Buffer::F32:
    *t.f32() = static_cast<float>(value);
    break;
  case runtime::Buffer::F64:
    *static_cast<double *>(t.data()) = value;
    break;
  case runtime::Buffer::I32:
    *static_cast<int32_t *>(t.data()) = static_cast<int32_t>(value);
    break;
  default:
    *static_cast<int64_t *>(t.data()) = static_cast<int64_t>(value);
    break;
  }
  return t;
}

} // namespace loom::cli
