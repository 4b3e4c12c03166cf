//===- LibraryKernelsTest.cpp - Library kernels on every device -----------===//
//
// A conformance suite of the library kernels (abi/LibraryCalls.h), run once
// per device kind (DeviceKernels/<Suite>.<Test>/<kind>); a kind this build or
// machine lacks is skipped. Each kernel test parses a function holding one
// op, runs it through the reference interpreter, then encodes the op as
// codegen does (encodeLibraryCall), copies the same inputs into the device's
// memory and runs the kernel by name (Device::callLibrary); the CPU does so
// with 1 and 3 threads. Result tensors start as copies of NaN bytes, so an
// element a kernel forgets to write shows. Refusals (ids out of range,
// mismatched shapes, damaged attributes) are checked on every device too.
//
// The CPU's own machinery is tested here as plain tests: its kernel
// registry, the thread pool, the SGEMM wrapper, and that codegen has a
// library call for every op a compiled model leaves outside loom.fusion.
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"
#include "TestUtil.h"

#include "abi/DType.h"
#include "abi/LibraryCalls.h"
#include "codegen/common/LibraryCalls.h"
#include "frontend/Config.h"
#include "frontend/Transformer.h"
#include "ir/Interpreter.h"
#include "ir/LoomDialect.h"
#include "passes/Pipeline.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/VecMath.h"

#include "mlir/IR/Diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace mlir;
using namespace loom;
using namespace loom::test;
using loom::cpu::TensorRef;

namespace {

//===----------------------------------------------------------------------===//
// Inputs and conversions
//===----------------------------------------------------------------------===//

/// Floats uniform in [-scale, scale], exactly representable in f32.
HostTensor randomF32(std::vector<int64_t> shape, unsigned seed,
                     double scale = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<double> data(shapeNumel(shape));
  for (double &v : data)
    v = static_cast<float>(dist(rng) * scale);
  return HostTensor(std::move(shape), DType::F32, std::move(data));
}

/// Ids uniform in [0, range).
HostTensor randomIds(std::vector<int64_t> shape, unsigned seed, int64_t range,
                     DType kind = DType::I32) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(0, range - 1);
  std::vector<double> data(shapeNumel(shape));
  for (double &v : data)
    v = static_cast<double>(dist(rng));
  return HostTensor(std::move(shape), kind, std::move(data));
}

HostTensor ids(std::vector<int64_t> shape, std::vector<double> values,
               DType kind = DType::I32) {
  return HostTensor(std::move(shape), kind, std::move(values));
}

DType dtypeOf(Type element) {
  if (element.isF32())
    return DType::F32;
  if (element.isF64())
    return DType::F64;
  if (element.isInteger(1))
    return DType::I1;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isInteger(64))
    return DType::I64;
  ADD_FAILURE() << "no buffer type for this element type";
  return DType::F32;
}

void writeElements(const HostTensor &t, const TensorRef &ref) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.data[i];
    switch (ref.dtype) {
    case DType::F32:
      ref.f32()[i] = static_cast<float>(v);
      break;
    case DType::F64:
      static_cast<double *>(ref.data)[i] = v;
      break;
    case DType::I32:
      ref.i32()[i] = static_cast<int32_t>(v);
      break;
    case DType::I64:
      ref.i64()[i] = static_cast<int64_t>(v);
      break;
    case DType::I1:
      static_cast<uint8_t *>(ref.data)[i] = v != 0;
      break;
    default:
      ADD_FAILURE() << "unexpected dtype";
    }
  }
}

std::vector<double> readElements(const TensorRef &ref) {
  std::vector<double> out(ref.numel());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    switch (ref.dtype) {
    case DType::F32:
      out[i] = ref.f32()[i];
      break;
    case DType::F64:
      out[i] = static_cast<const double *>(ref.data)[i];
      break;
    case DType::I32:
      out[i] = ref.i32()[i];
      break;
    case DType::I64:
      out[i] = static_cast<double>(ref.i64()[i]);
      break;
    case DType::I1:
      out[i] = static_cast<const uint8_t *>(ref.data)[i];
      break;
    default:
      ADD_FAILURE() << "unexpected dtype";
    }
  }
  return out;
}

/// Expects `actual` to equal `expected` within `rel` of the largest
/// magnitude in `expected` (exactly when `rel` is 0); NaN matches only NaN.
void expectClose(const std::vector<double> &actual, const HostTensor &expected,
                 double rel, const std::string &what) {
  ASSERT_EQ(actual.size(), expected.data.size()) << what;
  double scale = 0;
  for (double v : expected.data)
    if (std::isfinite(v))
      scale = std::max(scale, std::fabs(v));
  double bound = rel * scale, worst = 0;
  size_t worstAt = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = actual[i], e = expected.data[i];
    if (std::isnan(e) || std::isnan(a)) {
      EXPECT_TRUE(std::isnan(a) && std::isnan(e))
          << what << " at " << i << ": " << a << " vs " << e;
      continue;
    }
    double d = a == e ? 0.0 : std::fabs(a - e);
    if (d > worst) {
      worst = d;
      worstAt = i;
    }
  }
  EXPECT_LE(worst, bound) << what << ": largest difference " << worst
                          << " at element " << worstAt << " ("
                          << actual[worstAt] << " vs " << expected.data[worstAt]
                          << "), scale " << scale;
}

//===----------------------------------------------------------------------===//
// One op through the interpreter and through its library kernel
//===----------------------------------------------------------------------===//

/// Makes result `result` (an index into the call's tensors) use the storage
/// of tensor `operand`, `byteOffset` bytes in, as the memory plan may.
struct Alias {
  int result, operand;
  int64_t byteOffset = 0;
};

struct KernelRun {
  Status status;                            // what the kernel returned
  std::vector<std::vector<double>> results; // per op result
  std::vector<HostTensor> expected;         // the interpreter's
  LibraryCall call;
};

/// A host copy of `ref`, which lies in `device`'s memory without owning it
/// (a result placed inside an operand).
ErrorOr<runtime::Tensor> readBack(runtime::Device &device,
                                  const TensorRef &ref) {
  ErrorOr<runtime::Tensor> host = runtime::Tensor::host(ref.dtype, ref.shape);
  if (!host || ref.bytes() == 0)
    return host;
  LOOM_RETURN_IF_ERROR(device.copy(host->data(), ref.data, ref.bytes(),
                                   runtime::CopyDirection::DeviceToHost));
  return host;
}

/// `func.func @main(params) -> (resultTypes) { body; return results }`.
std::string function(const std::string &params, const std::string &op,
                     const std::string &resultType,
                     const std::string &results = "%y") {
  return "func.func @main(" + params + ") -> (" + resultType + ") {\n  " + op +
         "\n  return " + results + " : " + resultType + "\n}\n";
}

/// Runs the only op of @main in `text` through the interpreter and through
/// its library kernel on `device`: the inputs are copied to device tensors,
/// the results start as copies of NaN bytes (-1 for integers), so an element
/// a kernel forgets to write shows, and come back to the host after the
/// call. The results of @main must be the op's results, in order.
KernelRun runKernel(runtime::Device &device, const std::string &text,
                    const std::vector<HostTensor> &inputs,
                    const std::vector<Alias> &aliases = {},
                    bool expectInterpreterError = false,
                    test::GoldenCase *record = nullptr) {
  KernelRun run;
  auto ctx = makeContext();
  auto module = parse(*ctx, text);
  if (!module)
    return run;
  auto fn = module->lookupSymbol<func::FuncOp>("main");
  Operation *op = &fn.getBody().front().front();

  auto results = Interpreter(*module).run("main", inputs);
  if (!results) {
    std::string message = llvm::toString(results.takeError());
    if (!expectInterpreterError)
      ADD_FAILURE() << "interpreter: " << message;
  } else {
    EXPECT_FALSE(expectInterpreterError) << "the interpreter accepted it";
    run.expected = std::move(*results);
  }

  FailureOr<LibraryCall> call = encodeLibraryCall(op);
  if (failed(call)) {
    ADD_FAILURE() << "no library call for the op";
    return run;
  }
  run.call = *call;

  size_t count = call->args.size();
  std::vector<bool> aliased(count);
  for (const Alias &a : aliases)
    aliased[a.result] = true;
  // Per tensor: its device memory, unless it lives in another tensor's.
  std::vector<runtime::Tensor> owned(count);
  runtime::LibraryCallArgs args;
  args.attrs = call->attrs;
  for (size_t i = 0; i < count; ++i) {
    Value v = call->args[i];
    auto type = cast<RankedTensorType>(v.getType());
    TensorRef ref;
    ref.dtype = dtypeOf(type.getElementType());
    ref.shape.assign(type.getShape().begin(), type.getShape().end());
    ErrorOr<runtime::Tensor> host = runtime::Tensor::host(ref.dtype, ref.shape);
    if (!host) {
      ADD_FAILURE() << "host tensor: " << host.error();
      return run;
    }
    // NaN bytes (-1 for integers): what a kernel does not write stays so.
    std::memset(host->data(), 0xff, host->bytes());
    if (auto arg = dyn_cast<BlockArgument>(v); arg && !aliased[i])
      writeElements(inputs[arg.getArgNumber()], host->ref());
    if (record) {
      ErrorOr<runtime::Tensor> kept =
          runtime::Tensor::host(ref.dtype, ref.shape);
      if (!kept) {
        ADD_FAILURE() << "host tensor: " << kept.error();
        return run;
      }
      std::memcpy(kept->data(), host->data(), host->bytes());
      record->args.push_back(std::move(*kept));
    }
    if (!aliased[i]) {
      ErrorOr<runtime::Tensor> placed = runtime::toDevice(device, host->ref());
      if (!placed) {
        ADD_FAILURE() << "copy to " << device.name() << ": " << placed.error();
        return run;
      }
      owned[i] = std::move(*placed);
      ref.data = owned[i].data();
    }
    args.tensors.push_back(ref);
  }
  for (const Alias &a : aliases)
    args.tensors[a.result].data =
        static_cast<char *>(args.tensors[a.operand].data) + a.byteOffset;

  if (record) {
    record->kernel = call->kernel;
    record->attrs = call->attrs;
    for (size_t i = count - op->getNumResults(); i < count; ++i)
      record->results.push_back(int(i));
    for (const Alias &a : aliases)
      record->aliases.push_back({a.result, a.operand, a.byteOffset});
  }
  run.status = device.callLibrary(call->kernel, args);
  Status synced = device.synchronize();
  EXPECT_TRUE(synced.ok()) << synced.message();
  size_t firstResult = count - op->getNumResults();
  for (size_t i = firstResult; i < count; ++i) {
    ErrorOr<runtime::Tensor> back = owned[i].data()
                                        ? runtime::toHost(owned[i])
                                        : readBack(device, args.tensors[i]);
    if (!back) {
      ADD_FAILURE() << "copy from " << device.name() << ": " << back.error();
      return run;
    }
    run.results.push_back(readElements(back->ref()));
  }
  return run;
}

std::string tensor(const std::vector<int64_t> &shape,
                   const std::string &element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

std::vector<int64_t> withLast(std::vector<int64_t> shape, int64_t last) {
  shape.back() = last;
  return shape;
}

//===----------------------------------------------------------------------===//
// The devices under test
//===----------------------------------------------------------------------===//

/// A tensor of `dtype` and `shape` whose memory callZeroed provides.
TensorRef shaped(DType dtype, std::vector<int64_t> shape) {
  return {nullptr, dtype, std::move(shape)};
}

/// A conformance test of the library kernels, run once per device kind. The
/// CPU is opened with 1 and 3 threads, so kernels that split their work are
/// checked both inline and split; other devices once.
class DeviceKernelTest : public testing::TestWithParam<std::string> {
protected:
  struct Variant {
    std::string label; // for traces: "cpu, 3 threads"
    std::shared_ptr<runtime::Device> device;
  };

  void SetUp() override {
    const std::string &kind = GetParam();
    std::vector<int> threadCounts = {0};
    if (onCpu())
      threadCounts = {1, 3};
    for (int threads : threadCounts) {
      std::string absent;
      std::shared_ptr<runtime::Device> device =
          test::openTestDevice(kind, threads, absent);
      if (!device) {
        if (!absent.empty())
          GTEST_SKIP() << absent;
        return;
      }
      variants.push_back({test::deviceLabel(*device, threads), device});
    }
  }

  bool onCpu() const { return GetParam() == "cpu"; }
  runtime::Device &device() { return *variants.front().device; }

  /// Checks the kernel against the interpreter on every variant.
  void checkKernel(const std::string &text,
                   const std::vector<HostTensor> &inputs, double rel,
                   const std::vector<Alias> &aliases = {}) {
    std::string golden = onCpu() ? test::goldenOutputDir() : "";
    for (const Variant &variant : variants) {
      SCOPED_TRACE(variant.label);
      // The first CPU variant's run, kept as a case for other devices.
      test::GoldenCase record;
      bool keep = !golden.empty() && &variant == &variants.front();
      KernelRun run = runKernel(*variant.device, text, inputs, aliases, false,
                                keep ? &record : nullptr);
      ASSERT_TRUE(run.status.ok()) << run.status.message();
      ASSERT_EQ(run.results.size(), run.expected.size());
      for (size_t i = 0; i < run.results.size(); ++i)
        expectClose(run.results[i], run.expected[i], rel,
                    run.call.kernel + " result " + std::to_string(i));
      if (keep) {
        record.name = test::nextGoldenName();
        record.rel = rel;
        for (const HostTensor &want : run.expected)
          record.want.push_back(want.data);
        Status written = test::writeGoldenCase(golden, record);
        EXPECT_TRUE(written.ok()) << written.message();
      }
    }
  }

  /// The kernel's error for `inputs` (the interpreter refuses them too),
  /// the same on every variant.
  std::string kernelError(const std::string &text,
                          const std::vector<HostTensor> &inputs) {
    std::string first;
    for (const Variant &variant : variants) {
      SCOPED_TRACE(variant.label);
      KernelRun run = runKernel(*variant.device, text, inputs, {}, true);
      EXPECT_FALSE(run.status.ok()) << "the kernel accepted bad inputs";
      EXPECT_EQ(run.status.code(), ErrorCode::InvalidArgument)
          << run.status.message();
      if (&variant == &variants.front())
        first = run.status.message();
      else
        EXPECT_EQ(run.status.message(), first);
    }
    return first;
  }

  /// Calls `kernel` on zeroed device tensors of the dtypes and shapes of
  /// `call.tensors` (whose data is ignored) with `call.attrs`, on every
  /// variant; returns the first variant's status and expects the others to
  /// agree.
  Status callZeroed(const std::string &kernel,
                    const runtime::LibraryCallArgs &call) {
    Status first;
    for (const Variant &variant : variants) {
      SCOPED_TRACE(variant.label);
      std::vector<runtime::Tensor> owned;
      ErrorOr<runtime::LibraryCallArgs> placed =
          test::zeroedOnDevice(*variant.device, call, owned);
      if (!placed)
        return placed.status();
      Status status = variant.device->callLibrary(kernel, *placed);
      Status synced = variant.device->synchronize();
      EXPECT_TRUE(synced.ok()) << synced.message();
      if (&variant == &variants.front()) {
        first = status;
      } else {
        EXPECT_EQ(status.code(), first.code());
        EXPECT_EQ(status.message(), first.message());
      }
    }
    return first;
  }

  /// Calls `kernel` as callZeroed does and expects it refused as damaged
  /// attributes, with a message that starts with the kernel's name and
  /// holds `part`.
  void expectCorruptAttrs(const char *kernel,
                          const runtime::LibraryCallArgs &call,
                          const std::string &part) {
    SCOPED_TRACE(kernel);
    Status status = callZeroed(kernel, call);
    EXPECT_EQ(status.code(), ErrorCode::Corrupt) << status.message();
    EXPECT_EQ(status.message().rfind(kernel, 0), 0u) << status.message();
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "\"" << status.message() << "\" lacks \"" << part << "\"";
  }

  /// Runs `body` with the CPU kernels' baseline vector code and, where this
  /// CPU has it, their AVX2 code; other devices run it once.
  template <typename F> void onEveryVectorPath(F body) {
    if (!onCpu()) {
      body();
      return;
    }
    for (bool avx2 : {false, true}) {
      cpu::setAvx2Enabled(avx2);
      if (avx2 && !cpu::avx2Enabled())
        break;
      SCOPED_TRACE(avx2 ? "avx2" : "baseline");
      body();
    }
    cpu::setAvx2Enabled(true);
  }

  std::vector<Variant> variants;
};

/// A suite of DeviceKernelTest cases, instantiated per device kind as
/// DeviceKernels/<Suite>.<Test>/<kind>.
#define DEVICE_KERNEL_SUITE(Suite)                                             \
  class Suite : public DeviceKernelTest {};                                    \
  INSTANTIATE_TEST_SUITE_P(DeviceKernels, Suite,                               \
                           testing::ValuesIn(test::deviceKindsUnderTest()),    \
                           test::deviceKindName)

} // namespace

//===----------------------------------------------------------------------===//
// Registry and encoder
//===----------------------------------------------------------------------===//

TEST(KernelRegistry, NamesAreSortedUniqueAndResolve) {
  std::vector<std::string> names = cpu::libraryKernelNames();
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string &name : names)
    EXPECT_NE(cpu::findLibraryKernel(name), nullptr) << name;
  for (const char *name :
       {"linear", "matmul", "copy", "transpose", "slice", "slice_grad",
        "concat", "sum_to", "broadcast_as", "gather", "scatter_add", "one_hot",
        "padding_mask", "causal_mask", "iota", "cross_entropy",
        "cross_entropy_grad", "attention", "attention_grad"})
    EXPECT_NE(cpu::findLibraryKernel(name), nullptr) << name;
  EXPECT_EQ(cpu::findLibraryKernel("lineaR"), nullptr);
  EXPECT_EQ(cpu::findLibraryKernel(""), nullptr);
  EXPECT_EQ(cpu::findLibraryKernel("zzz"), nullptr);
}

TEST(KernelRegistry, HasExactlyTheKernelsOfTheCallingConvention) {
  // Codegen emits calls of abi::libraryKernelNames(); a kernel added to the
  // convention or to the registry alone fails here, not in a compiled model.
  EXPECT_EQ(cpu::libraryKernelNames(), loom::abi::libraryKernelNames());
}

TEST(KernelRegistry, DTypeSizes) {
  EXPECT_EQ(dtypeSize(DType::F32), 4);
  EXPECT_EQ(dtypeSize(DType::F64), 8);
  EXPECT_EQ(dtypeSize(DType::F16), 2);
  EXPECT_EQ(dtypeSize(DType::BF16), 2);
  EXPECT_EQ(dtypeSize(DType::I32), 4);
  EXPECT_EQ(dtypeSize(DType::I64), 8);
  EXPECT_EQ(dtypeSize(DType::I1), 1);
  TensorRef t;
  t.shape = {2, 3, 4};
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.bytes(), 96);
  t.shape = {};
  EXPECT_EQ(t.numel(), 1);
}

TEST(KernelRegistry, TakesTheAvx2PathsWhereTheCpuHasThem) {
#if defined(__x86_64__)
  bool cpuHasIt =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(cpu::avx2Enabled(), cpuHasIt);
  cpu::setAvx2Enabled(false);
  EXPECT_FALSE(cpu::avx2Enabled());
  cpu::setAvx2Enabled(true);
  EXPECT_EQ(cpu::avx2Enabled(), cpuHasIt);
#else
  EXPECT_FALSE(cpu::avx2Enabled());
#endif
}

TEST(LibraryCalls, LinearSignalsItsOptionalOperands) {
  auto ctx = makeContext();
  auto module = parse(
      *ctx, function("%x: tensor<3x4xf32>, %w: tensor<5x4xf32>, "
                     "%r: tensor<3x5xf32>",
                     "%y = loom.linear %x, %w residual(%r : tensor<3x5xf32>) "
                     "activation gelu : tensor<3x4xf32>, tensor<5x4xf32> -> "
                     "tensor<3x5xf32>",
                     "tensor<3x5xf32>"));
  ASSERT_TRUE(module);
  auto fn = module->lookupSymbol<func::FuncOp>("main");
  Operation *op = &fn.getBody().front().front();
  FailureOr<LibraryCall> call = encodeLibraryCall(op);
  ASSERT_TRUE(succeeded(call));
  EXPECT_EQ(call->kernel, "linear");
  EXPECT_EQ(call->attrs.ints, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(call->attrs.floats.empty());
  ErrorOr<loom::abi::LinearCall> linear =
      loom::abi::LinearCall::decode(call->attrs);
  ASSERT_TRUE(bool(linear)) << linear.error();
  EXPECT_FALSE(linear->hasBias);
  EXPECT_TRUE(linear->hasResidual);
  EXPECT_EQ(linear->activation, loom::abi::Activation::Gelu);
  ASSERT_EQ(call->args.size(), 4u);
  EXPECT_EQ(call->args[2], fn.getArgument(2));
  EXPECT_EQ(call->args[3], op->getResult(0));
}

TEST(LibraryCalls, RefusesAnOpWithoutAKernel) {
  auto ctx = makeContext();
  auto module = parse(*ctx, function("%x: tensor<4xf32>",
                                     "%y = loom.exp %x : (tensor<4xf32>) -> "
                                     "tensor<4xf32>",
                                     "tensor<4xf32>"));
  ASSERT_TRUE(module);
  std::string diag;
  ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
    diag += d.str();
    return success();
  });
  auto fn = module->lookupSymbol<func::FuncOp>("main");
  EXPECT_TRUE(failed(encodeLibraryCall(&fn.getBody().front().front())));
  EXPECT_NE(diag.find("no CPU library kernel for"), std::string::npos) << diag;
  EXPECT_NE(diag.find("loom.exp"), std::string::npos) << diag;
}

/// Every top-level op that a compiled model leaves outside loom.fusion has
/// a library call whose kernel the runtime has.
void expectEveryOpHasAKernel(const TransformerConfig &config) {
  auto ctx = makeContext();
  auto module = buildModelModule(*ctx, config);
  ASSERT_TRUE(module);
  CompilePipelineOptions options;
  options.training.dModel = config.d_model();
  options.maxTokens = 64;
  options.maxLen = 16;
  options.maxBatch = 8;
  ASSERT_TRUE(succeeded(runCompilePipeline(*module, options)));
  std::set<std::string> kernels;
  for (auto fn : module->getOps<func::FuncOp>())
    for (Operation &op : fn.getBody().front().without_terminator()) {
      if (isa<FusionOp, ConstantOp>(op))
        continue;
      FailureOr<LibraryCall> call = encodeLibraryCall(&op);
      ASSERT_TRUE(succeeded(call)) << op.getName().getStringRef().str();
      EXPECT_NE(cpu::findLibraryKernel(call->kernel), nullptr) << call->kernel;
      EXPECT_EQ(call->args.size(), op.getNumOperands() + op.getNumResults());
      kernels.insert(call->kernel);
    }
  // The kernels a training step cannot do without.
  for (const char *name : {"linear", "matmul", "attention", "attention_grad",
                           "gather", "scatter_add", "cross_entropy",
                           "cross_entropy_grad", "transpose", "sum_to"})
    EXPECT_TRUE(kernels.count(name)) << name;
}

TEST(LibraryCalls, CoverEveryOpOfTheCompiledPresets) {
  for (const char *preset : {"tiny", "small"}) {
    SCOPED_TRACE(preset);
    auto config = presetConfig(preset);
    ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
    expectEveryOpHasAKernel(*config);
  }
}

TEST(LibraryCalls, CoverEveryOpOfAPreNormModel) {
  auto config = presetConfig("tiny");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  config->set_norm(TransformerConfig::PRE);
  config->set_final_norm(true);
  config->set_share_embeddings(false);
  config->set_tie_output(false);
  expectEveryOpHasAKernel(*config);
}

//===----------------------------------------------------------------------===//
// ThreadPool
//===----------------------------------------------------------------------===//

TEST(ThreadPool, CoversTheRangeExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    cpu::ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 7, 100, 1000, 100003}) {
      for (int64_t grain : {1, 3, 64, 1000, 200000}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " n " +
                     std::to_string(n) + " grain " + std::to_string(grain));
        std::vector<std::atomic<int>> hits(n);
        std::mutex mutex;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        pool.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            hits[i].fetch_add(1);
          std::lock_guard<std::mutex> lock(mutex);
          ranges.emplace_back(begin, end);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "index " << i;
        int shortRanges = 0;
        for (auto [begin, end] : ranges) {
          EXPECT_LT(begin, end);
          shortRanges += end - begin < grain;
        }
        EXPECT_LE(shortRanges, 1);
        if (n == 0)
          EXPECT_TRUE(ranges.empty());
      }
    }
  }
}

TEST(ThreadPool, RunsInlineWhenSmallOrAlone) {
  std::thread::id caller = std::this_thread::get_id();
  for (int threads : {1, 4}) {
    cpu::ThreadPool pool(threads);
    int64_t n = threads == 1 ? 100000 : 10;
    int calls = 0;
    pool.parallelFor(n, 16, [&](int64_t begin, int64_t end) {
      ++calls;
      EXPECT_EQ(std::this_thread::get_id(), caller);
      EXPECT_EQ(begin, 0);
      EXPECT_EQ(end, n);
    });
    EXPECT_EQ(calls, 1);
  }
}

TEST(ThreadPool, UsesItsWorkersAndSurvivesManyCalls) {
  cpu::ThreadPool pool(3);
  std::mutex mutex;
  std::vector<std::thread::id> seen;
  std::atomic<int64_t> total{0};
  for (int call = 0; call < 2000; ++call) {
    pool.parallelFor(64, 1, [&](int64_t begin, int64_t end) {
      total += end - begin;
      if (call % 100 == 0) {
        // Long enough that a sleeping worker wakes and takes a chunk.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        std::lock_guard<std::mutex> lock(mutex);
        seen.push_back(std::this_thread::get_id());
      }
    });
  }
  EXPECT_EQ(total.load(), 2000 * 64);
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  EXPECT_GT(seen.size(), 1u) << "no worker ever took a chunk";
}

//===----------------------------------------------------------------------===//
// SGEMM
//===----------------------------------------------------------------------===//

TEST(Sgemm, BothBackendsMatchANaiveProduct) {
  cpu::Blas before = cpu::blasBackend();
  for (cpu::Blas backend : {cpu::Blas::OneDnn, cpu::Blas::OpenBlas}) {
    cpu::setBlasBackend(backend);
    EXPECT_STREQ(cpu::blasName(),
                 backend == cpu::Blas::OneDnn ? "onednn" : "openblas");
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::string(cpu::blasName()) + (ta ? " A^T" : " A") +
                     (tb ? " B^T" : " B"));
        int64_t m = 37, n = 29, k = 53;
        // Leading dimensions beyond the minimum: padding is skipped.
        int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
        std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb),
            c(m * ldc);
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> dist(-1, 1);
        for (float &v : a)
          v = dist(rng);
        for (float &v : b)
          v = dist(rng);
        for (float &v : c)
          v = dist(rng);
        std::vector<float> c0 = c;
        float alpha = 0.75f, beta = -0.5f;
        cpu::sgemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                   c.data(), ldc);
        double worst = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            if (j >= n) {
              // Padding of C is left alone.
              EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]);
              continue;
            }
            double s = 0;
            for (int64_t p = 0; p < k; ++p)
              s += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                   double(tb ? b[j * ldb + p] : b[p * ldb + j]);
            double expected = alpha * s + beta * c0[i * ldc + j];
            worst = std::max(worst, std::fabs(expected - c[i * ldc + j]));
          }
        EXPECT_LT(worst, 1e-4);
      }
    // An empty contraction scales C by beta.
    std::vector<float> c = {1, 2, 3, 4};
    cpu::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 2.0f,
               c.data(), 2);
    EXPECT_EQ(c, (std::vector<float>{2, 4, 6, 8}));
  }
  cpu::setBlasBackend(before);
}

extern "C" int omp_get_max_threads();

TEST(Sgemm, ThreadCountReachesEveryCallingThread) {
  cpu::Blas before = cpu::blasBackend();
  cpu::setBlasBackend(cpu::Blas::OneDnn);
  for (int threads : {1, 3}) {
    cpu::setBlasThreads(threads);
    int seen = -1;
    // A thread that never set it: OpenMP keeps the count per thread.
    std::thread([&] {
      float a = 2, b = 3, c = 0;
      cpu::sgemm(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
      EXPECT_EQ(c, 6.0f);
      seen = omp_get_max_threads();
    }).join();
    EXPECT_EQ(seen, threads);
  }
  cpu::setBlasThreads(static_cast<int>(std::thread::hardware_concurrency()));
  cpu::setBlasBackend(before);
}

//===----------------------------------------------------------------------===//
// linear and matmul
//===----------------------------------------------------------------------===//

DEVICE_KERNEL_SUITE(LinearKernel);

TEST_P(LinearKernel, MatchesTheInterpreterForEveryEpilogue) {
  const std::vector<std::vector<int64_t>> inputShapes = {{6, 24}, {2, 5, 24}};
  int64_t n = 19;
  for (const auto &xShape : inputShapes)
    for (bool bias : {false, true})
      for (bool residual : {false, true})
        for (const char *act : {"none", "relu", "gelu"}) {
          SCOPED_TRACE(tensor(xShape) + (bias ? " bias" : "") +
                       (residual ? " residual" : "") + " " + act);
          std::vector<int64_t> yShape = withLast(xShape, n);
          std::string x = tensor(xShape), y = tensor(yShape),
                      w = tensor({n, 24}), b = tensor({n});
          std::string op = "%y = loom.linear %x, %w";
          std::string params = "%x: " + x + ", %w: " + w;
          std::vector<HostTensor> inputs = {randomF32(xShape, 1),
                                            randomF32({n, 24}, 2)};
          if (bias) {
            op += " bias(%b : " + b + ")";
            params += ", %b: " + b;
            inputs.push_back(randomF32({n}, 3));
          }
          if (residual) {
            op += " residual(%r : " + y + ")";
            params += ", %r: " + y;
            inputs.push_back(randomF32(yShape, 4));
          }
          if (std::string(act) != "none")
            op += std::string(" activation ") + act;
          op += " : " + x + ", " + w + " -> " + y;
          onEveryVectorPath(
              [&] { checkKernel(function(params, op, y), inputs, 1e-5); });
        }
}

TEST_P(LinearKernel, GeluHoldsOverTheWholeRangeOfErf) {
  // Products up to about +-10 reach both flat ends of erf and its middle.
  std::string x = tensor({64, 8}), w = tensor({40, 8}), y = tensor({64, 40});
  onEveryVectorPath([&] {
    checkKernel(function("%x: " + x + ", %w: " + w,
                         "%y = loom.linear %x, %w activation gelu : " + x +
                             ", " + w + " -> " + y,
                         y),
                {randomF32({64, 8}, 5, 2.0), randomF32({40, 8}, 6, 2.0)}, 1e-5);
  });
}

TEST_P(LinearKernel, LargeEnoughToSplitTheEpilogue) {
  std::string x = tensor({300, 64}), w = tensor({128, 64}), b = tensor({128}),
              y = tensor({300, 128});
  checkKernel(function("%x: " + x + ", %w: " + w + ", %b: " + b + ", %r: " + y,
                       "%y = loom.linear %x, %w bias(%b : " + b +
                           ") residual(%r : " + y + ") activation relu : " + x +
                           ", " + w + " -> " + y,
                       y),
              {randomF32({300, 64}, 1), randomF32({128, 64}, 2),
               randomF32({128}, 3), randomF32({300, 128}, 4)},
              1e-5);
}

TEST_P(LinearKernel, RefusesMismatchedShapes) {
  runtime::LibraryCallArgs call;
  call.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {5, 3}),
                  shaped(DType::F32, {3, 5})};
  call.attrs.ints = {0, 0, 0};
  Status status = callZeroed("linear", call);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("weight [N, K]"), std::string::npos)
      << status.message();
  call.attrs.ints = {1, 0, 0};
  status = callZeroed("linear", call);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("expected 4 tensor arguments"),
            std::string::npos)
      << status.message();
}

DEVICE_KERNEL_SUITE(LibraryKernels);

TEST_P(LibraryKernels, RefuseDamagedAttributes) {
  // Tensors that would be fine: only the attributes are wrong.
  runtime::LibraryCallArgs linear;
  linear.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {5, 4}),
                    shaped(DType::F32, {3, 5})};
  linear.attrs.ints = {0, 0};
  expectCorruptAttrs("linear", linear, "expected 3 integer and 0 float");
  linear.attrs.ints = {0, 0, 7};
  expectCorruptAttrs("linear", linear, "unknown activation 7");
  linear.attrs.ints = {2, 0, 0};
  expectCorruptAttrs("linear", linear, "hasBias is 2");

  runtime::LibraryCallArgs matmul;
  matmul.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {4, 5}),
                    shaped(DType::F32, {3, 5})};
  matmul.attrs.ints = {0, 0};
  matmul.attrs.floats = {1.0};
  expectCorruptAttrs("matmul", matmul, "expected 2 integer and 0 float");

  runtime::LibraryCallArgs transpose;
  transpose.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {4, 3})};
  transpose.attrs.ints = {0, 0};
  expectCorruptAttrs("transpose", transpose, "not one of [0, 2)");
  transpose.attrs.ints = {1, 0};
  Status status = callZeroed("transpose", transpose);
  EXPECT_TRUE(status.ok()) << status.message();
  // A permutation, but of another rank: the tensor's fault, not the call's.
  transpose.attrs.ints = {2, 0, 1};
  status = callZeroed("transpose", transpose);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("perm is not a permutation of the dims of "
                                  "3x4"),
            std::string::npos)
      << status.message();

  runtime::LibraryCallArgs slice;
  slice.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {3, 2})};
  slice.attrs.ints = {1, 0};
  expectCorruptAttrs("slice", slice, "[dim, start, end]");
  slice.attrs.ints = {-1, 0, 2};
  expectCorruptAttrs("slice", slice, "negative slice dim -1");

  runtime::LibraryCallArgs copy;
  copy.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {12})};
  copy.attrs.ints = {0};
  expectCorruptAttrs("copy", copy, "copy takes no attributes");

  runtime::LibraryCallArgs oneHot;
  oneHot.tensors = {shaped(DType::I32, {3}), shaped(DType::F32, {3, 4})};
  oneHot.attrs.ints = {0};
  expectCorruptAttrs("one_hot", oneHot, "depth 0 is not positive");

  runtime::LibraryCallArgs crossEntropy;
  crossEntropy.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::I32, {3}),
                          shaped(DType::F32, {3})};
  crossEntropy.attrs.ints = {0};
  crossEntropy.attrs.floats = {1.0};
  expectCorruptAttrs("cross_entropy", crossEntropy, "label smoothing");
  crossEntropy.attrs.floats = {};
  expectCorruptAttrs("cross_entropy", crossEntropy,
                     "expected 1 integer and 1 float");
}

struct MatmulCase {
  std::vector<int64_t> lhs, rhs;
  bool ta, tb;
};

DEVICE_KERNEL_SUITE(MatmulKernel);

TEST_P(MatmulKernel, EveryTransposeAndBroadcast) {
  const MatmulCase cases[] = {
      // Plain matrices, every transpose combination.
      {{7, 5}, {5, 6}, false, false},
      {{5, 7}, {5, 6}, true, false},
      {{7, 5}, {6, 5}, false, true},
      {{5, 7}, {6, 5}, true, true},
      // A weight: lhs's batch folds into one GEMM.
      {{2, 3, 7, 5}, {5, 6}, false, false},
      {{2, 3, 7, 5}, {6, 5}, false, true},
      {{3, 7, 5}, {1, 5, 6}, false, false},
      // Batched with broadcasting, and a transposed batched lhs.
      {{3, 7, 5}, {2, 1, 5, 6}, false, false},
      {{2, 1, 5, 7}, {3, 6, 5}, true, true},
      {{7, 5}, {4, 5, 6}, false, false},
      {{4, 5, 7}, {5, 6}, true, false},
      // A weight gradient: x^T dy over all tokens.
      {{40, 16}, {40, 24}, true, false},
  };
  for (const MatmulCase &c : cases) {
    int64_t ra = c.lhs.size(), rb = c.rhs.size();
    int64_t m = c.lhs[c.ta ? ra - 1 : ra - 2];
    int64_t n = c.rhs[c.tb ? rb - 2 : rb - 1];
    std::vector<int64_t> batchA(c.lhs.begin(), c.lhs.end() - 2),
        batchB(c.rhs.begin(), c.rhs.end() - 2);
    size_t rank = std::max(batchA.size(), batchB.size());
    batchA.insert(batchA.begin(), rank - batchA.size(), 1);
    batchB.insert(batchB.begin(), rank - batchB.size(), 1);
    std::vector<int64_t> out;
    for (size_t i = 0; i < rank; ++i)
      out.push_back(std::max(batchA[i], batchB[i]));
    out.push_back(m);
    out.push_back(n);
    std::string attrs;
    if (c.ta || c.tb)
      attrs = std::string(" {") + (c.ta ? "transpose_lhs" : "") +
              (c.ta && c.tb ? ", " : "") + (c.tb ? "transpose_rhs" : "") + "}";
    std::string a = tensor(c.lhs), b = tensor(c.rhs), y = tensor(out);
    SCOPED_TRACE(a + " " + b + attrs);
    std::string text = function("%a: " + a + ", %b: " + b,
                                "%y = loom.matmul %a, %b" + attrs + " : (" + a +
                                    ", " + b + ") -> " + y,
                                y);
    std::vector<HostTensor> inputs = {randomF32(c.lhs, 1), randomF32(c.rhs, 2)};
    if (!onCpu()) {
      checkKernel(text, inputs, 1e-5);
      continue;
    }
    // The CPU's GEMM has two backends; each must pass.
    for (cpu::Blas backend : {cpu::Blas::OneDnn, cpu::Blas::OpenBlas}) {
      SCOPED_TRACE(backend == cpu::Blas::OneDnn ? "onednn" : "openblas");
      cpu::Blas before = cpu::blasBackend();
      cpu::setBlasBackend(backend);
      checkKernel(text, inputs, 1e-5);
      cpu::setBlasBackend(before);
    }
  }
}

//===----------------------------------------------------------------------===//
// Views, transposes, slices, concats, broadcasts, sums
//===----------------------------------------------------------------------===//

DEVICE_KERNEL_SUITE(CopyKernel);

TEST_P(CopyKernel, ViewsCopyOrStayInPlace) {
  std::string x = tensor({2, 3, 4});
  struct ViewCase {
    std::string params, op, result;
    std::vector<HostTensor> inputs;
  };
  const ViewCase cases[] = {
      {"%x: " + x,
       "%y = loom.reshape %x [6, 4] : (" + x + ") -> tensor<6x4xf32>",
       "tensor<6x4xf32>",
       {randomF32({2, 3, 4}, 1)}},
      {"%x: " + x + ", %l: tensor<4x6xf32>",
       "%y = loom.reshape_as %x, %l : (" + x +
           ", tensor<4x6xf32>) -> tensor<4x6xf32>",
       "tensor<4x6xf32>",
       {randomF32({2, 3, 4}, 2), randomF32({4, 6}, 3)}},
      {"%x: tensor<2x3xi32>",
       "%y = loom.expand_dims %x [1] : (tensor<2x3xi32>) -> tensor<2x1x3xi32>",
       "tensor<2x1x3xi32>",
       {randomIds({2, 3}, 4, 100)}},
  };
  for (const ViewCase &c : cases) {
    SCOPED_TRACE(c.op);
    std::string text = function(c.params, c.op, c.result);
    checkKernel(text, c.inputs, 0);
    // Placed on its operand's bytes: nothing moves, the result reads right.
    int result = static_cast<int>(c.inputs.size());
    checkKernel(text, c.inputs, 0, {{result, 0}});
  }
}

TEST_P(CopyKernel, LargeCopySplitsOverThePool) {
  std::string x = tensor({300, 1000});
  checkKernel(function("%x: " + x,
                       "%y = loom.reshape %x [1000, 300] : (" + x +
                           ") -> tensor<1000x300xf32>",
                       "tensor<1000x300xf32>"),
              {randomF32({300, 1000}, 1)}, 0);
}

DEVICE_KERNEL_SUITE(TransposeKernel);

TEST_P(TransposeKernel, Permutations) {
  struct Case {
    std::vector<int64_t> shape, perm;
    std::string element;
  };
  const Case cases[] = {
      {{2, 3, 4, 5}, {0, 2, 1, 3}, "f32"}, // [B, T, H, D] -> [B, H, T, D]
      {{7, 9}, {1, 0}, "f32"},
      {{3, 4, 5}, {2, 0, 1}, "f32"},
      {{2, 3, 4, 5}, {3, 2, 1, 0}, "f32"},
      {{2, 1, 4, 3}, {0, 2, 1, 3}, "f32"}, // a decode step: T = 1
      {{4, 6}, {1, 0}, "i32"},
      {{4, 6, 2}, {1, 0, 2}, "i64"},
      {{6, 70, 8, 32}, {0, 2, 1, 3}, "f32"}, // enough rows for the pool
      {{6, 8, 70, 32}, {0, 2, 1, 3}, "f32"},
  };
  for (const Case &c : cases) {
    std::vector<int64_t> out;
    std::string perm;
    for (int64_t p : c.perm) {
      out.push_back(c.shape[p]);
      perm += (perm.empty() ? "" : ", ") + std::to_string(p);
    }
    std::string x = tensor(c.shape, c.element), y = tensor(out, c.element);
    SCOPED_TRACE(x + " [" + perm + "]");
    HostTensor input =
        c.element == "f32"
            ? randomF32(c.shape, 1)
            : randomIds(c.shape, 1, 1000,
                        c.element == "i32" ? DType::I32 : DType::I64);
    checkKernel(
        function("%x: " + x,
                 "%y = loom.transpose %x [" + perm + "] : (" + x + ") -> " + y,
                 y),
        {input}, 0);
  }
}

struct SliceCase {
  std::vector<int64_t> shape;
  int64_t dim, start, end;
  std::string element = "f32";
};

/// The result shape of loom.slice.
std::vector<int64_t> sliced(const SliceCase &c) {
  std::vector<int64_t> shape = c.shape;
  int64_t size = shape[c.dim];
  int64_t s = c.start < 0 ? c.start + size : c.start;
  int64_t e = c.end <= 0 ? c.end + size : c.end;
  shape[c.dim] = e - s;
  return shape;
}

std::string sliceAttrs(const SliceCase &c) {
  return "{dim = " + std::to_string(c.dim) +
         " : i64, start = " + std::to_string(c.start) +
         " : i64, end = " + std::to_string(c.end) + " : i64}";
}

DEVICE_KERNEL_SUITE(SliceKernel);

TEST_P(SliceKernel, LeadingAndInnerDims) {
  const SliceCase cases[] = {
      {{12, 5}, 0, 4, 8},        // q/k/v rows of a packed weight
      {{12}, 0, 8, 12},          // its bias
      {{3, 7}, 1, 1, 0, "i32"},  // targets: x[:, 1:]
      {{3, 7}, 1, 0, -1, "i32"}, // decoder inputs: x[:, :-1]
      {{2, 6, 4}, 1, -4, -1},    {{2, 6, 4}, 2, 1, 3}, {{2, 6, 4}, 0, 1, 2},
      {{64, 300, 4}, 1, 5, 290}, // enough rows for the pool
  };
  for (const SliceCase &c : cases) {
    std::string x = tensor(c.shape, c.element),
                y = tensor(sliced(c), c.element);
    SCOPED_TRACE(x + " " + sliceAttrs(c));
    HostTensor input = c.element == "f32" ? randomF32(c.shape, 1)
                                          : randomIds(c.shape, 1, 1000);
    checkKernel(function("%x: " + x,
                         "%y = loom.slice %x " + sliceAttrs(c) + " : (" + x +
                             ") -> " + y,
                         y),
                {input}, 0);
  }
}

TEST_P(SliceKernel, AContiguousSliceOnItsOperandsBytesIsLeftAlone) {
  SliceCase c{{12, 5}, 0, 4, 8};
  std::string x = tensor(c.shape), y = tensor(sliced(c));
  checkKernel(
      function("%x: " + x,
               "%y = loom.slice %x " + sliceAttrs(c) + " : (" + x + ") -> " + y,
               y),
      {randomF32(c.shape, 1)}, 0, {{1, 0, 4 * 5 * 4}});
}

TEST_P(SliceKernel, RefusesARangeOutsideTheDim) {
  runtime::LibraryCallArgs call;
  call.tensors = {shaped(DType::F32, {3, 4}), shaped(DType::F32, {3, 4})};
  call.attrs.ints = {1, 2, 9};
  Status status = callZeroed("slice", call);
  EXPECT_EQ(status.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(status.message().find("range [2, 9) is outside dim 1 of 3x4"),
            std::string::npos)
      << status.message();
}

DEVICE_KERNEL_SUITE(SliceGradKernel);

TEST_P(SliceGradKernel, PlacesTheSliceInZeros) {
  const SliceCase cases[] = {
      {{12, 5}, 0, 4, 8},   {{12}, 0, 8, 0},          {{2, 6, 4}, 1, 1, -2},
      {{2, 6, 4}, 2, 0, 1}, {{40, 30, 20}, 1, 3, 20},
  };
  for (const SliceCase &c : cases) {
    std::string x = tensor(sliced(c)), like = tensor(c.shape);
    SCOPED_TRACE(like + " " + sliceAttrs(c));
    checkKernel(function("%x: " + x + ", %l: " + like,
                         "%y = loom.slice_grad %x, %l " + sliceAttrs(c) +
                             " : (" + x + ", " + like + ") -> " + like,
                         like),
                {randomF32(sliced(c), 1), randomF32(c.shape, 2)}, 0);
  }
}

DEVICE_KERNEL_SUITE(ConcatKernel);

TEST_P(ConcatKernel, SeveralDims) {
  struct Case {
    std::vector<std::vector<int64_t>> inputs;
    int64_t dim;
    std::string element = "f32";
  };
  const Case cases[] = {
      {{{2, 3}, {4, 3}}, 0},
      {{{2, 3}, {2, 1}, {2, 5}}, 1},
      {{{2, 4, 3, 8}, {2, 4, 1, 8}}, 2}, // a decode cache grows by a step
      {{{2, 5, 1}, {2, 5, 1}}, 2},
      {{{3, 2}, {3, 4}}, 1, "i32"},
      {{{64, 40, 8}, {64, 40, 8}, {64, 40, 16}}, 2},
  };
  for (const Case &c : cases) {
    std::vector<int64_t> out = c.inputs[0];
    out[c.dim] = 0;
    std::string params, operands, types;
    std::vector<HostTensor> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      out[c.dim] += c.inputs[i][c.dim];
      std::string t = tensor(c.inputs[i], c.element);
      std::string name = "%x" + std::to_string(i);
      params += (i ? ", " : "") + name + ": " + t;
      operands += (i ? ", " : "") + name;
      types += (i ? ", " : "") + t;
      inputs.push_back(c.element == "f32"
                           ? randomF32(c.inputs[i], i + 1)
                           : randomIds(c.inputs[i], i + 1, 1000));
    }
    std::string y = tensor(out, c.element);
    SCOPED_TRACE(types + " dim " + std::to_string(c.dim));
    checkKernel(function(params,
                         "%y = loom.concat " + operands +
                             " {dim = " + std::to_string(c.dim) +
                             " : i64} : (" + types + ") -> " + y,
                         y),
                inputs, 0);
  }
}

DEVICE_KERNEL_SUITE(BroadcastAsKernel);

TEST_P(BroadcastAsKernel, Shapes) {
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> cases[] = {
      {{3, 1}, {2, 3, 4}},
      {{4}, {2, 3, 4}},
      {{2, 1, 4}, {2, 3, 4}},
      {{1}, {5}}};
  for (const auto &[from, to] : cases) {
    std::string x = tensor(from), y = tensor(to);
    SCOPED_TRACE(x + " to " + y);
    checkKernel(function("%x: " + x + ", %l: " + y,
                         "%y = loom.broadcast_as %x, %l : (" + x + ", " + y +
                             ") -> " + y,
                         y),
                {randomF32(from, 1), randomF32(to, 2)}, 0);
  }
}

DEVICE_KERNEL_SUITE(SumToKernel);

TEST_P(SumToKernel, Shapes) {
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> cases[] = {
      {{2, 3, 16}, {16}},    // a bias gradient
      {{8, 64, 256}, {256}}, // large enough for the pool
      {{2, 3, 4}, {3, 1}},   {{2, 3, 4}, {1, 3, 4}}, {{2, 3, 4}, {2, 1, 4}},
      {{2, 3, 4}, {}},       {{5, 4}, {5, 4}},       {{6, 300}, {6, 1}},
  };
  for (const auto &[from, to] : cases) {
    std::string x = tensor(from), y = tensor(to);
    SCOPED_TRACE(x + " to " + y);
    checkKernel(
        function("%x: " + x + ", %l: " + y,
                 "%y = loom.sum_to %x, %l : (" + x + ", " + y + ") -> " + y, y),
        {randomF32(from, 1), randomF32(to, 2)}, 1e-6);
  }
}

//===----------------------------------------------------------------------===//
// Gathers, scatters, masks, positions
//===----------------------------------------------------------------------===//

DEVICE_KERNEL_SUITE(GatherKernel);

TEST_P(GatherKernel, EmbeddingRows) {
  for (DType kind : {DType::I32, DType::I64}) {
    std::string idType = kind == DType::I32 ? "i32" : "i64";
    for (const std::vector<int64_t> &idShape :
         std::vector<std::vector<int64_t>>{{2, 3}, {7}, {40, 30}}) {
      std::string t = tensor({50, 16}), i = tensor(idShape, idType);
      std::vector<int64_t> out = idShape;
      out.push_back(16);
      std::string y = tensor(out);
      SCOPED_TRACE(i);
      checkKernel(
          function("%t: " + t + ", %i: " + i,
                   "%y = loom.gather %t, %i : (" + t + ", " + i + ") -> " + y,
                   y),
          {randomF32({50, 16}, 1), randomIds(idShape, 2, 50, kind)}, 0);
    }
  }
}

TEST_P(GatherKernel, NamesAnIdOutsideTheTable) {
  std::string t = tensor({10, 4}), i = tensor({2, 3}, "i32"),
              y = tensor({2, 3, 4});
  std::string text =
      function("%t: " + t + ", %i: " + i,
               "%y = loom.gather %t, %i : (" + t + ", " + i + ") -> " + y, y);
  std::string error = kernelError(
      text, {randomF32({10, 4}, 1), ids({2, 3}, {1, 2, 3, 10, 4, 5})});
  EXPECT_NE(error.find("id 10 is outside [0, 10)"), std::string::npos) << error;
  error = kernelError(
      text, {randomF32({10, 4}, 1), ids({2, 3}, {1, -3, 3, 0, 4, 5})});
  EXPECT_NE(error.find("id -3 is outside [0, 10)"), std::string::npos) << error;
}

DEVICE_KERNEL_SUITE(ScatterAddKernel);

TEST_P(ScatterAddKernel, RepeatedIdsAccumulate) {
  const std::pair<std::vector<int64_t>, int64_t> cases[] = {
      {{2, 3}, 5},   // 6 ids over 5 rows: some repeat
      {{4, 16}, 60}, // 60 rows of 512: split over the pool by rows
  };
  for (const auto &[idShape, rows] : cases) {
    int64_t row = rows > 10 ? 512 : 4;
    std::vector<int64_t> upd = idShape;
    upd.push_back(row);
    std::string u = tensor(upd), i = tensor(idShape, "i32"),
                l = tensor({rows, row});
    SCOPED_TRACE(u + " into " + l);
    HostTensor idValues = randomIds(idShape, 3, rows);
    idValues.data[1] = idValues.data[0]; // at least one repeat
    checkKernel(function("%u: " + u + ", %i: " + i + ", %l: " + l,
                         "%y = loom.scatter_add %u, %i, %l : (" + u + ", " + i +
                             ", " + l + ") -> " + l,
                         l),
                {randomF32(upd, 1), idValues, randomF32({rows, row}, 2)}, 1e-6);
  }
}

TEST_P(ScatterAddKernel, NamesAnIdOutsideTheTable) {
  std::string u = tensor({3, 4}), i = tensor({3}, "i64"), l = tensor({5, 4});
  std::string error =
      kernelError(function("%u: " + u + ", %i: " + i + ", %l: " + l,
                           "%y = loom.scatter_add %u, %i, %l : (" + u + ", " +
                               i + ", " + l + ") -> " + l,
                           l),
                  {randomF32({3, 4}, 1), ids({3}, {0, 5, 1}, DType::I64),
                   randomF32({5, 4}, 2)});
  EXPECT_NE(error.find("id 5 is outside [0, 5)"), std::string::npos) << error;
}

DEVICE_KERNEL_SUITE(MaskKernels);

TEST_P(MaskKernels, PaddingMask) {
  for (const char *idType : {"i32", "i64"}) {
    std::string i = tensor({3, 5}, idType), y = tensor({3, 1, 1, 5});
    HostTensor idValues =
        ids({3, 5}, {4, 5, 0, 0, 0, 1, 2, 3, 4, 5, 7, 0, 0, 0, 0},
            std::string(idType) == "i32" ? DType::I32 : DType::I64);
    checkKernel(function("%i: " + i,
                         "%y = loom.padding_mask %i {pad = 0 : i64} : " + i +
                             " -> " + y,
                         y),
                {idValues}, 0);
  }
}

TEST_P(MaskKernels, CausalMask) {
  std::string x = tensor({2, 6}, "i32"), y = tensor({6, 6});
  checkKernel(
      function("%x: " + x,
               "%y = loom.causal_mask %x {dim = 1 : i64} : " + x + " -> " + y,
               y),
      {randomIds({2, 6}, 1, 9)}, 0);
}

DEVICE_KERNEL_SUITE(IotaKernel);

TEST_P(IotaKernel, ElementTypes) {
  for (const char *element : {"f32", "i32", "i64"}) {
    std::string x = tensor({2, 7}, "i32"), y = tensor({7}, element);
    SCOPED_TRACE(element);
    checkKernel(
        function("%x: " + x,
                 "%y = loom.iota %x {dim = 1 : i64} : " + x + " -> " + y, y),
        {randomIds({2, 7}, 1, 9)}, 0);
  }
}

DEVICE_KERNEL_SUITE(OneHotKernel);

TEST_P(OneHotKernel, ElementTypes) {
  for (const char *element : {"f32", "f64"}) {
    std::string i = tensor({2, 3}, "i32"), y = tensor({2, 3, 6}, element);
    SCOPED_TRACE(element);
    // 7 is outside the depth: a row of zeros.
    checkKernel(
        function("%i: " + i,
                 "%y = loom.one_hot %i {depth = 6 : i64} : " + i + " -> " + y,
                 y),
        {ids({2, 3}, {0, 5, 7, 2, 2, 3})}, 0);
  }
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

struct LossCase {
  std::vector<int64_t> targets;
  int64_t classes;
  double eps;
  double scale; // of the logits
};

const LossCase kLossCases[] = {
    {{2, 3}, 37, 0.1, 1.0}, // C not a multiple of the vector width
    {{4}, 8, 0.0, 1.0},
    {{3, 2}, 1000, 0.1, 30.0}, // large logits: needs the max shift
    {{40}, 1024, 0.2, 4.0},    // enough rows for the pool
};

std::string lossAttrs(const LossCase &c) {
  return "{ignore_index = 0 : i64, label_smoothing = " + std::to_string(c.eps) +
         " : f64}";
}

/// Targets in [0, classes) with a few 0s (ignored).
HostTensor lossTargets(const LossCase &c, DType kind) {
  HostTensor t = randomIds(c.targets, 9, c.classes, kind);
  t.data[0] = 0;
  if (t.numel() > 3)
    t.data[3] = 0;
  return t;
}

DEVICE_KERNEL_SUITE(CrossEntropyKernel);

TEST_P(CrossEntropyKernel, LabelSmoothingAndIgnoredTargets) {
  for (const LossCase &c : kLossCases)
    for (DType kind : {DType::I32, DType::I64}) {
      std::vector<int64_t> logits = c.targets;
      logits.push_back(c.classes);
      std::string idType = kind == DType::I32 ? "i32" : "i64";
      std::string l = tensor(logits), t = tensor(c.targets, idType),
                  y = tensor(c.targets);
      SCOPED_TRACE(l + " " + lossAttrs(c));
      onEveryVectorPath([&] {
        checkKernel(function("%l: " + l + ", %t: " + t,
                             "%y = loom.cross_entropy %l, %t " + lossAttrs(c) +
                                 " : (" + l + ", " + t + ") -> " + y,
                             y),
                    {randomF32(logits, 1, c.scale), lossTargets(c, kind)},
                    1e-5);
      });
    }
}

TEST_P(CrossEntropyKernel, NamesATargetOutsideTheClasses) {
  std::string l = tensor({3, 5}), t = tensor({3}, "i32"), y = tensor({3});
  std::string error = kernelError(
      function("%l: " + l + ", %t: " + t,
               "%y = loom.cross_entropy %l, %t {ignore_index = 0 : i64, "
               "label_smoothing = 0.1 : f64} : (" +
                   l + ", " + t + ") -> " + y,
               y),
      {randomF32({3, 5}, 1), ids({3}, {1, 5, 0})});
  EXPECT_NE(error.find("target id 5 is outside [0, 5)"), std::string::npos)
      << error;
}

DEVICE_KERNEL_SUITE(CrossEntropyGradKernel);

TEST_P(CrossEntropyGradKernel, OutOfPlaceAndInPlace) {
  for (const LossCase &c : kLossCases)
    for (bool inPlace : {false, true}) {
      std::vector<int64_t> logits = c.targets;
      logits.push_back(c.classes);
      std::string l = tensor(logits), t = tensor(c.targets, "i32"),
                  g = tensor(c.targets);
      SCOPED_TRACE(l + " " + lossAttrs(c) + (inPlace ? " in place" : ""));
      std::vector<Alias> aliases;
      if (inPlace)
        aliases.push_back({3, 0}); // the result over the logits
      onEveryVectorPath([&] {
        checkKernel(function("%l: " + l + ", %t: " + t + ", %g: " + g,
                             "%y = loom.cross_entropy_grad %l, %t, %g " +
                                 lossAttrs(c) + " : (" + l + ", " + t + ", " +
                                 g + ") -> " + l,
                             l),
                    {randomF32(logits, 1, c.scale), lossTargets(c, DType::I32),
                     randomF32(c.targets, 2)},
                    1e-5, aliases);
      });
    }
}
