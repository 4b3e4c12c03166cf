//===- OnnxBackendTest.cpp - ONNX's backend tests on Loom -----------------===//

#include "driver/OnnxBackendTest.h"

#include "driver/CompileDriver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/Interpreter.h"
#include "ir/LoomDialect.h"
#include "passes/Pipeline.h"
#include "runtime/Session.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

namespace loom::driver {

namespace {

llvm::Error cliError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error toError(const Status &status) {
  if (status.ok())
    return llvm::Error::success();
  return cliError(status.message());
}

std::unique_ptr<mlir::MLIRContext> onnxContext() {
  auto ctx = std::make_unique<mlir::MLIRContext>();
  ctx->loadDialect<LoomDialect, mlir::func::FuncDialect>();
  return ctx;
}

/// The files `prefix_N.pb` of `dir`, in N's order.
std::vector<std::string> numberedFiles(const std::string &dir,
                                       llvm::StringRef prefix) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int n = 0;
    if (name.consume_front(prefix) && name.consume_back(".pb") &&
        !name.getAsInteger(10, n))
      found.push_back({n, it->path()});
  }
  llvm::sort(found);
  std::vector<std::string> out;
  for (auto &f : found)
    out.push_back(f.second);
  return out;
}

std::vector<std::string> dataSets(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (llvm::sys::path::filename(it->path()).starts_with("test_data_set_") &&
        llvm::sys::fs::is_directory(it->path()))
      out.push_back(it->path());
  llvm::sort(out);
  return out;
}

/// `x` with as many digits as an f32 needs to round-trip.
std::string shortest(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", x);
  return text;
}

/// Why `got` is not `want`, or "" when it is.
std::string compareOutput(const HostTensor &got, const HostTensor &want,
                          double rtol, double atol) {
  if (got.shape != want.shape) {
    auto text = [](const std::vector<int64_t> &s) {
      std::string t = "[";
      for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
      return t + "]";
    };
    return "shape " + text(got.shape) + ", expected " + text(want.shape);
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.data[i], w = want.data[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w)))
      return "element " + std::to_string(i) + " is " + shortest(g) +
             ", expected " + shortest(w);
  }
  return "";
}

/// `why` without the model's path in front.
std::string unprefixed(const std::string &why, const std::string &path) {
  if (llvm::StringRef(why).starts_with(path + ": "))
    return why.substr(path.size() + 2);
  return why;
}

/// `t` as a host tensor of the runtime, element by element.
llvm::Expected<runtime::Tensor> runtimeTensor(const HostTensor &t) {
  ErrorOr<runtime::Tensor> out = runtime::Tensor::host(t.kind, t.shape);
  if (!out)
    return toError(out.status());
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.data[i];
    void *p = out->data();
    switch (t.kind) {
    case DType::F32:
      static_cast<float *>(p)[i] = static_cast<float>(x);
      break;
    case DType::F64:
      static_cast<double *>(p)[i] = x;
      break;
    case DType::I32:
      static_cast<int32_t *>(p)[i] = static_cast<int32_t>(x);
      break;
    case DType::I64:
      static_cast<int64_t *>(p)[i] = static_cast<int64_t>(x);
      break;
    case DType::I1:
      static_cast<uint8_t *>(p)[i] = x != 0;
      break;
    case DType::F16:
    case DType::BF16: {
      llvm::APFloat f(x);
      bool lost;
      f.convert(t.kind == DType::F16 ? llvm::APFloat::IEEEhalf()
                                     : llvm::APFloat::BFloat(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      static_cast<uint16_t *>(p)[i] =
          static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
      break;
    }
    }
  }
  return std::move(*out);
}

/// A runtime tensor (host memory) as a host tensor.
llvm::Expected<HostTensor> hostTensor(const runtime::Tensor &t) {
  HostTensor out(t.shape(), t.dtype());
  const void *p = t.data();
  for (int64_t i = 0; i < out.numel(); ++i) {
    switch (t.dtype()) {
    case DType::F32:
      out.data[i] = static_cast<const float *>(p)[i];
      break;
    case DType::F64:
      out.data[i] = static_cast<const double *>(p)[i];
      break;
    case DType::I32:
      out.data[i] = static_cast<const int32_t *>(p)[i];
      break;
    case DType::I64:
      out.data[i] = double(static_cast<const int64_t *>(p)[i]);
      break;
    case DType::I1:
      out.data[i] = static_cast<const uint8_t *>(p)[i] != 0;
      break;
    case DType::F16:
    case DType::BF16: {
      uint16_t bits = static_cast<const uint16_t *>(p)[i];
      out.data[i] =
          llvm::APFloat(t.dtype() == DType::F16 ? llvm::APFloat::IEEEhalf()
                                                : llvm::APFloat::BFloat(),
                        llvm::APInt(16, bits))
              .convertToDouble();
      break;
    }
    }
  }
  return out;
}

/// Compiles imported `module` for this CPU (no training: it has no loss) and
/// runs @forward on `params` (by name) and `inputs`. A model the pipeline or
/// the code generator refuses is an error whose text says so.
llvm::Expected<std::vector<HostTensor>>
runOnCpu(mlir::ModuleOp module, const std::map<std::string, HostTensor> &params,
         const std::vector<HostTensor> &inputs) {
  CompilePipelineOptions pipeline;
  pipeline.differentiate = false;
  pipeline.keysPositionMajor = true;
  if (mlir::failed(runCompilePipeline(module, pipeline)))
    return cliError("the compile pipeline refused it");
  llvm::Expected<runtime::Executable> exe = writeExecutable(
      module, std::string(),
      {pipeline.maxTokens, pipeline.maxLen, pipeline.maxBatch}, CodeTarget());
  if (!exe)
    return exe.takeError();
  // One thread: a backend test's tensors are a few elements.
  ErrorOr<std::shared_ptr<runtime::Device>> cpu = runtime::openDevice("cpu", 1);
  if (!cpu)
    return toError(cpu.status());
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(std::move(*exe));
  if (!program)
    return toError(program.status());
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, *cpu);
  if (!session)
    return toError(session.status());
  for (const auto &[name, value] : params) {
    llvm::Expected<runtime::Tensor> t = runtimeTensor(value);
    if (!t)
      return t.takeError();
    if (llvm::Error err = toError((*session)->setState(name, t->ref())))
      return err;
  }
  std::vector<runtime::Tensor> held;
  std::vector<runtime::TensorRef> refs;
  for (const HostTensor &input : inputs) {
    llvm::Expected<runtime::Tensor> t = runtimeTensor(input);
    if (!t)
      return t.takeError();
    held.push_back(std::move(*t));
    refs.push_back(held.back().ref());
  }
  auto outputs = (*session)->run("forward", refs);
  if (!outputs)
    return toError(outputs.status());
  std::vector<HostTensor> out;
  for (const runtime::NamedTensor &o : *outputs) {
    llvm::Expected<HostTensor> h = hostTensor(o.tensor);
    if (!h)
      return h.takeError();
    out.push_back(std::move(*h));
  }
  return out;
}

/// One data set's model, imported, and the inputs its function takes.
struct ImportedSet {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  OnnxImport import;
  std::vector<HostTensor> inputs;
  bool bound = false;
};

/// Imports `modelPath` for a data set with `inputs`: as it is, or, where the
/// model takes a shape or axes as data, with the set's integer inputs bound
/// as constants.
llvm::Expected<ImportedSet> importForSet(mlir::MLIRContext &ctx,
                                         const std::string &modelPath,
                                         std::vector<HostTensor> inputs) {
  ImportedSet out;
  out.module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
  llvm::Expected<OnnxImport> imported =
      importOnnxFile(*out.module, modelPath, OnnxImportOptions());
  if (!imported) {
    std::string why = llvm::toString(imported.takeError());
    if (why.find("known when importing") == std::string::npos)
      return cliError(unprefixed(why, modelPath));
    OnnxImportOptions options;
    for (const HostTensor &t : inputs)
      options.inputValues.push_back(t.kind == DType::I64 || t.kind == DType::I32
                                        ? std::optional<HostTensor>(t)
                                        : std::nullopt);
    out.module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx));
    imported = importOnnxFile(*out.module, modelPath, options);
    if (!imported)
      return cliError(
          unprefixed(llvm::toString(imported.takeError()), modelPath));
    std::vector<HostTensor> kept;
    for (HostTensor &t : inputs)
      if (t.kind != DType::I64 && t.kind != DType::I32)
        kept.push_back(std::move(t));
    inputs = std::move(kept);
    out.bound = true;
  }
  out.import = std::move(*imported);
  out.inputs = std::move(inputs);
  return out;
}

/// Why `outputs` are not `expected`, or "".
std::string compareOutputs(const std::vector<HostTensor> &outputs,
                           const std::vector<HostTensor> &expected,
                           const OnnxImport &import, double rtol, double atol) {
  if (expected.size() != outputs.size())
    return llvm::formatv("{0} outputs, expected {1}", outputs.size(),
                         expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string why = compareOutput(outputs[i], expected[i], rtol, atol);
    if (!why.empty())
      return "output '" + import.outputs[i] + "': " + why;
  }
  return "";
}

} // namespace

OnnxTestResult runOnnxTest(const std::string &dir, double rtol, double atol,
                           bool cpu) {
  auto ctx = onnxContext();
  // The pipeline's and code generator's diagnostics say why the CPU
  // backend refuses a model.
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(ctx.get(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
    return mlir::success();
  });
  std::string modelPath = dir + "/model.onnx";
  std::vector<std::string> sets = dataSets(dir);
  if (sets.empty())
    return {OnnxTestOutcome::Failed, "no test_data_set_* folder"};
  bool bound = false;
  std::string cpuRefusal;
  for (const std::string &set : sets) {
    std::string setName = llvm::sys::path::filename(set).str();
    std::vector<HostTensor> inputs, expected;
    for (auto [prefix, into] :
         {std::pair{"input_", &inputs}, std::pair{"output_", &expected}})
      for (const std::string &file : numberedFiles(set, prefix)) {
        llvm::Expected<HostTensor> t = readOnnxTensorFile(file);
        if (!t)
          return {OnnxTestOutcome::Unsupported, llvm::toString(t.takeError())};
        into->push_back(std::move(*t));
      }
    llvm::Expected<ImportedSet> imported =
        importForSet(*ctx, modelPath, inputs);
    if (!imported)
      return {OnnxTestOutcome::Unsupported,
              llvm::toString(imported.takeError())};
    bound |= imported->bound;
    if (imported->inputs.size() != imported->import.inputs.size())
      return {OnnxTestOutcome::Failed,
              llvm::formatv("{0}: {1} inputs for a model of {2}", setName,
                            imported->inputs.size(),
                            imported->import.inputs.size())};

    // The reference interpreter: parameters first (the function's order),
    // then the inputs.
    std::vector<HostTensor> args;
    mlir::func::FuncOp func =
        imported->module->lookupSymbol<mlir::func::FuncOp>("forward");
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<mlir::StringAttr>(i, kParamAttr))
        args.push_back(imported->import.parameters.at(name.str()));
    args.insert(args.end(), imported->inputs.begin(), imported->inputs.end());
    auto outputs = Interpreter(*imported->module).run("forward", args);
    if (!outputs)
      return {OnnxTestOutcome::Failed,
              setName + ": " + llvm::toString(outputs.takeError())};
    std::string why =
        compareOutputs(*outputs, expected, imported->import, rtol, atol);
    if (!why.empty())
      return {OnnxTestOutcome::Failed, setName + ": " + why};

    // The CPU backend, on the same import compiled.
    if (!cpu || !cpuRefusal.empty())
      continue;
    diagnostics.clear();
    auto compiled = runOnCpu(*imported->module, imported->import.parameters,
                             imported->inputs);
    if (!compiled) {
      cpuRefusal = llvm::toString(compiled.takeError());
      if (!diagnostics.empty())
        cpuRefusal += ": " + diagnostics;
      continue;
    }
    why = compareOutputs(*compiled, expected, imported->import, rtol, atol);
    if (!why.empty())
      return {OnnxTestOutcome::Failed, setName + ": the CPU backend: " + why};
  }
  std::string note =
      bound ? "integer inputs bound as constants when importing" : "";
  if (!cpuRefusal.empty())
    return {OnnxTestOutcome::InterpreterOnly,
            "the CPU backend does not compile it: " + cpuRefusal};
  return {OnnxTestOutcome::Passed, note};
}

std::vector<std::string> findOnnxTests(const std::string &dir) {
  std::vector<std::string> tests;
  if (llvm::sys::fs::exists(dir + "/model.onnx"))
    return {dir};
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (llvm::sys::fs::exists(it->path() + "/model.onnx"))
      tests.push_back(it->path());
  llvm::sort(tests);
  return tests;
}

} // namespace loom::driver
