//===- AttentionKernelsTest.cpp - Attention kernels on every device -------===//
//
// A conformance suite of the attention kernels, run once per device kind
// (DeviceAttention/AttentionKernels.<Test>/<kind>); a kind this build or
// machine lacks is skipped. Each case parses a function holding
// loom.attention and one holding loom.attention_grad, runs the reference
// interpreter on random inputs, then encodes the op as a library call, copies
// the same inputs into the device's memory and runs the kernel by name
// (Device::callLibrary): forward and backward agree to 1e-5 of each row's
// scale, dropout keeps exactly what the interpreter keeps, and bad shapes and
// damaged attributes are refused. On the CPU, pools of 3 and 1 threads and
// no pool at all give bitwise the same results.
//
// How codegen encodes the ops (AttentionEncoding) and the CPU registry
// (CpuAttention) are plain tests.
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"
#include "TestUtil.h"

#include "abi/CounterRng.h"
#include "codegen/common/LibraryCalls.h"
#include "ir/Interpreter.h"
#include "ir/LoomDialect.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/AttentionKernels.h"
#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/Kernels.h"

#include "mlir/IR/Diagnostics.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>

using namespace mlir;
using namespace loom;
using loom::cpu::KernelCall;
using loom::cpu::TensorRef;

namespace {

enum class MaskFill {
  Padding,   // 0 for a sentence's keys, -1e9 after its length
  Random,    // values in [-2, 0], some -1e9
  MaskedRow, // Random, and one row of -1e9 throughout
};

struct Case {
  std::vector<int64_t> q, k, v, mask; // no mask when empty
  MaskFill fill = MaskFill::Padding;
  bool causal = false;
  double scale = 0.25;
  double rate = 0;
  /// Spread of q and k: larger values give peakier softmax rows.
  double spread = 1.5;
  /// k and v are [Sk, ..., D] (forward only: inference).
  bool keysPositionMajor = false;
  /// k and v are bf16, q f32 (forward only: a decoder's narrow caches).
  bool bf16Keys = false;
  /// Also checks that every row's probabilities sum to 1 in the backward,
  /// through sum_j dV[j] = sum_i dO[i] (no dropout): what the interpreter
  /// and the kernel would agree on even when both were wrong.
  bool rowsSumToOne = false;
};

std::string tensorType(const std::vector<int64_t> &shape,
                       const char *element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

std::vector<int64_t> withLast(std::vector<int64_t> shape, int64_t last) {
  shape.back() = last;
  return shape;
}

std::vector<int64_t> outShape(const Case &c) {
  return withLast(c.q, c.v.back());
}
std::vector<int64_t> lseShape(const Case &c) {
  return {c.q.begin(), c.q.end() - 1};
}

/// @fwd(q, k, v[, mask][, seed]) -> (out, lse) and
/// @bwd(q, k, v, out, lse, dout[, mask][, seed]) -> (dq, dk, dv).
std::string moduleText(const Case &c) {
  const char *kv = c.bf16Keys ? "bf16" : "f32";
  std::string tq = tensorType(c.q), tk = tensorType(c.k, kv),
              tv = tensorType(c.v, kv), to = tensorType(outShape(c)),
              tl = tensorType(lseShape(c));
  std::string extraArgs, extraOperands;
  if (!c.mask.empty()) {
    extraArgs += ", %m: " + tensorType(c.mask);
    extraOperands += " mask(%m : " + tensorType(c.mask) + ")";
  }
  if (c.rate > 0) {
    extraArgs += ", %seed: tensor<i64>";
    extraOperands += " seed(%seed : tensor<i64>)";
  }
  std::ostringstream attrs;
  attrs.precision(17);
  attrs << "{scale = " << c.scale << " : f64";
  if (c.causal)
    attrs << ", causal";
  if (c.rate > 0)
    attrs << ", dropout_rate = " << c.rate
          << " : f64, dropout_offset = 5 : i64";
  std::string backwardAttrs = attrs.str() + "}";
  if (c.keysPositionMajor)
    attrs << ", keys_position_major";
  attrs << "}";
  std::ostringstream os;
  os << "func.func @fwd(%q: " << tq << ", %k: " << tk << ", %v: " << tv
     << extraArgs << ") -> (" << to << ", " << tl << ") {\n"
     << "  %o, %l = loom.attention %q, %k, %v" << extraOperands << " "
     << attrs.str() << " : " << tq << ", " << tk << ", " << tv << " -> " << to
     << ", " << tl << "\n"
     << "  return %o, %l : " << to << ", " << tl << "\n}\n";
  if (c.keysPositionMajor || c.bf16Keys)
    return os.str(); // no gradient
  os << "func.func @bwd(%q: " << tq << ", %k: " << tk << ", %v: " << tv
     << ", %o: " << to << ", %l: " << tl << ", %do: " << to << extraArgs
     << ") -> (" << tq << ", " << tk << ", " << tv << ") {\n"
     << "  %dq, %dk, %dv = loom.attention_grad %q, %k, %v, %o, %l, %do"
     << extraOperands << " " << backwardAttrs << " : " << tq << ", " << tk
     << ", " << tv << ", " << to << ", " << tl << ", " << to << " -> " << tq
     << ", " << tk << ", " << tv << "\n"
     << "  return %dq, %dk, %dv : " << tq << ", " << tk << ", " << tv
     << "\n}\n";
  return os.str();
}

/// Values a float holds exactly, so both sides see the same inputs.
HostTensor randomTensor(std::mt19937 &rng, const std::vector<int64_t> &shape,
                        double spread = 1.0) {
  std::uniform_real_distribution<float> dist(-spread, spread);
  HostTensor t(shape, DType::F32);
  for (double &x : t.data)
    x = dist(rng);
  return t;
}

HostTensor makeMask(std::mt19937 &rng, const std::vector<int64_t> &shape,
                    MaskFill fill) {
  HostTensor t(shape, DType::F32);
  int64_t cols = shape.back(), rows = t.numel() / cols;
  int64_t perFirst = t.numel() / shape.front();
  std::uniform_real_distribution<float> dist(-2, 0);
  std::bernoulli_distribution masked(0.15);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double &x = t.data[r * cols + j];
      if (fill == MaskFill::Padding) {
        // Sentence b (the first dim) has cols - 3b keys, at least one.
        int64_t b = r * cols / perFirst;
        int64_t length = std::max<int64_t>(1, cols - 3 * b);
        x = j < length ? 0.0 : -1e9;
      } else {
        x = masked(rng) ? -1e9 : dist(rng);
        if (fill == MaskFill::MaskedRow && r == std::min<int64_t>(1, rows - 1))
          x = -1e9;
      }
    }
  return t;
}

/// Expects `got` to hold `want`'s values within `tol` of the largest
/// magnitude of each row (last dim) of `want`, and 1.
void expectClose(const std::vector<float> &got, const HostTensor &want,
                 double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.data.size()) << what;
  int64_t cols =
      want.shape.empty() ? 1 : std::max<int64_t>(1, want.shape.back());
  int64_t bad = 0;
  for (size_t row = 0; row * cols < got.size(); ++row) {
    double scale = 1;
    for (int64_t j = 0; j < cols; ++j)
      scale = std::max(scale, std::fabs(want.data[row * cols + j]));
    for (int64_t j = 0; j < cols; ++j) {
      size_t i = row * cols + j;
      double diff = std::fabs(double(got[i]) - want.data[i]);
      if (!(diff <= tol * scale) && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: kernel " << got[i]
                      << ", interpreter " << want.data[i] << " (row scale "
                      << scale << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " elements differ";
}

std::vector<HostTensor> interpret(ModuleOp module, StringRef fn,
                                  const std::vector<HostTensor> &args) {
  auto results = Interpreter(module).run(fn, args);
  if (!results) {
    ADD_FAILURE() << "@" << fn.str() << ": "
                  << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

/// The single attention op of function `fn`.
Operation *findOp(ModuleOp module, StringRef fn) {
  auto func = module.lookupSymbol<func::FuncOp>(fn);
  Operation *found = nullptr;
  func.walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op))
      found = op;
  });
  return found;
}

//===----------------------------------------------------------------------===//
// The devices under test
//===----------------------------------------------------------------------===//

/// Runs a library kernel by name on tensors in a device's memory.
using CallFn = std::function<Status(runtime::Device &, const std::string &,
                                    const runtime::LibraryCallArgs &)>;

/// One way of running the kernels: a device, and how to call them on it.
struct Variant {
  std::string label; // for traces: "cpu, 3 threads"
  std::shared_ptr<runtime::Device> device;
  CallFn call;
};

Status callOnDevice(runtime::Device &device, const std::string &kernel,
                    const runtime::LibraryCallArgs &args) {
  Status status = device.callLibrary(kernel, args);
  Status synced = device.synchronize();
  EXPECT_TRUE(synced.ok()) << synced.message();
  return status;
}

/// The CPU kernel called directly with no thread pool at all, on the
/// (host) memory of a CPU device.
Status callWithoutPool(runtime::Device &, const std::string &kernel,
                       const runtime::LibraryCallArgs &args) {
  cpu::LibraryKernel fn = cpu::findLibraryKernel(kernel);
  if (!fn)
    return Status::failure("no CPU kernel " + kernel, ErrorCode::NotFound);
  KernelCall call(args, nullptr);
  return fn(call);
}

/// Runs the library call of `op` on device copies of the function's
/// arguments `args`, its results starting as NaN; returns the results'
/// values, or fails the test.
std::vector<std::vector<float>> runKernel(Operation *op,
                                          const std::vector<HostTensor> &args,
                                          const Variant &variant,
                                          test::GoldenCase *record = nullptr) {
  auto encoded = encodeAttentionCall(op);
  if (failed(encoded)) {
    ADD_FAILURE() << "encodeAttentionCall failed";
    return {};
  }
  runtime::Device &device = *variant.device;
  runtime::LibraryCallArgs call;
  call.attrs = encoded->attrs;
  std::vector<runtime::Tensor> placed;
  std::vector<size_t> resultAt; // per op result: its index in `placed`
  for (Value v : encoded->args) {
    auto type = cast<RankedTensorType>(v.getType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    DType dtype = type.getElementType().isInteger(64) ? DType::I64
                  : type.getElementType().isBF16()    ? DType::BF16
                                                      : DType::F32;
    ErrorOr<runtime::Tensor> host = runtime::Tensor::host(dtype, shape);
    if (!host) {
      ADD_FAILURE() << host.error();
      return {};
    }
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      const HostTensor &h = args[arg.getArgNumber()];
      for (int64_t i = 0; i < host->numel(); ++i) {
        if (dtype == DType::I64)
          static_cast<int64_t *>(host->data())[i] =
              static_cast<int64_t>(h.data[i]);
        else if (dtype == DType::BF16)
          static_cast<uint16_t *>(host->data())[i] =
              cpu::bf16FromFloat(static_cast<float>(h.data[i]));
        else
          host->f32()[i] = static_cast<float>(h.data[i]);
      }
    } else {
      // What the kernel does not write stays NaN.
      std::fill(host->f32(), host->f32() + host->numel(), std::nanf(""));
      resultAt.push_back(placed.size());
    }
    if (record) {
      ErrorOr<runtime::Tensor> kept = runtime::Tensor::host(dtype, shape);
      if (!kept) {
        ADD_FAILURE() << kept.error();
        return {};
      }
      std::memcpy(kept->data(), host->data(), host->bytes());
      record->args.push_back(std::move(*kept));
    }
    ErrorOr<runtime::Tensor> onDevice = runtime::toDevice(device, host->ref());
    if (!onDevice) {
      ADD_FAILURE() << "copy to " << device.name() << ": " << onDevice.error();
      return {};
    }
    call.tensors.push_back(onDevice->ref());
    placed.push_back(std::move(*onDevice));
  }
  if (record) {
    record->kernel = encoded->kernel;
    record->attrs = encoded->attrs;
    for (size_t at : resultAt)
      record->results.push_back(int(at));
  }
  Status status = variant.call ? variant.call(device, encoded->kernel, call)
                               : callOnDevice(device, encoded->kernel, call);
  if (!status.ok()) {
    ADD_FAILURE() << "kernel refused the call: " << status.message();
    return {};
  }
  std::vector<std::vector<float>> results;
  for (size_t at : resultAt) {
    ErrorOr<runtime::Tensor> back = runtime::toHost(placed[at]);
    if (!back) {
      ADD_FAILURE() << "copy from " << device.name() << ": " << back.error();
      return {};
    }
    results.emplace_back(back->f32(), back->f32() + back->numel());
  }
  return results;
}

/// A conformance test of the attention kernels, run once per device kind
/// (DeviceAttention/AttentionKernels.<Test>/<kind>). The CPU runs each case
/// with 3 threads, 1 thread and no pool at all, which must agree bitwise;
/// other devices run it once.
class AttentionKernels : public testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    const std::string &kind = GetParam();
    bool onCpu = kind == "cpu";
    for (int threads : onCpu ? std::vector<int>{3, 1} : std::vector<int>{0}) {
      std::string absent;
      std::shared_ptr<runtime::Device> device =
          test::openTestDevice(kind, threads, absent);
      if (!device) {
        if (!absent.empty())
          GTEST_SKIP() << absent;
        return;
      }
      variants.push_back(
          {test::deviceLabel(*device, threads), device, nullptr});
    }
    if (onCpu)
      variants.push_back(
          {"cpu, no pool", variants.back().device, callWithoutPool});
  }

  /// The whole check of one case: forward, then backward from the
  /// interpreter's out and lse, on every variant; the first is checked
  /// against the interpreter, the others must agree with it bitwise.
  void checkCase(const Case &c, unsigned seed) {
    auto ctx = test::makeContext();
    std::string text = moduleText(c);
    auto module = test::parse(*ctx, text);
    ASSERT_TRUE(module);
    std::mt19937 rng(seed);
    std::vector<HostTensor> fwdArgs = {randomTensor(rng, c.q, c.spread),
                                       randomTensor(rng, c.k, c.spread),
                                       randomTensor(rng, c.v)};
    if (c.bf16Keys)
      for (HostTensor *t : {&fwdArgs[1], &fwdArgs[2]}) {
        t->kind = DType::BF16;
        for (double &x : t->data)
          x = cpu::floatFromBf16(cpu::bf16FromFloat(float(x)));
      }
    std::vector<HostTensor> extra;
    if (!c.mask.empty())
      extra.push_back(makeMask(rng, c.mask, c.fill));
    if (c.rate > 0)
      extra.push_back(HostTensor::scalar(20240 + seed, DType::I64));
    fwdArgs.insert(fwdArgs.end(), extra.begin(), extra.end());

    auto want = interpret(*module, "fwd", fwdArgs);
    ASSERT_EQ(want.size(), 2u);
    Operation *fwd = findOp(*module, "fwd");
    test::GoldenCase fwdCase;
    auto got = runKernel(fwd, fwdArgs, variants.front(),
                         keepingCases() ? &fwdCase : nullptr);
    ASSERT_EQ(got.size(), 2u);
    expectClose(got[0], want[0], 1e-5, "out");
    expectClose(got[1], want[1], 1e-5, "lse");
    keepCase(fwdCase, want);
    for (size_t i = 1; i < variants.size(); ++i)
      EXPECT_EQ(runKernel(fwd, fwdArgs, variants[i]), got)
          << variants[i].label << " differs from " << variants.front().label;
    if (c.bf16Keys) {
      // bf16 keys and values are widened as they are read: the result is
      // that of the same values held in f32, up to the order in which a
      // score's products are summed (sixteen at a time, even and odd
      // elements apart: load16Split).
      Case wide = c;
      wide.bf16Keys = false;
      auto wideModule = test::parse(*ctx, moduleText(wide));
      ASSERT_TRUE(wideModule);
      std::vector<HostTensor> wideArgs = fwdArgs;
      wideArgs[1].kind = wideArgs[2].kind = DType::F32;
      auto same =
          runKernel(findOp(*wideModule, "fwd"), wideArgs, variants.front());
      ASSERT_EQ(same.size(), 2u);
      for (size_t r = 0; r < 2; ++r)
        expectClose(
            got[r],
            HostTensor(want[r].shape, DType::F32,
                       std::vector<double>(same[r].begin(), same[r].end())),
            2e-6, r ? "lse against f32 keys" : "out against f32 keys");
    }
    if (c.keysPositionMajor || c.bf16Keys)
      return;

    std::vector<HostTensor> bwdArgs = {
        fwdArgs[0], fwdArgs[1], fwdArgs[2],
        want[0],    want[1],    randomTensor(rng, outShape(c))};
    bwdArgs.insert(bwdArgs.end(), extra.begin(), extra.end());
    auto wantGrad = interpret(*module, "bwd", bwdArgs);
    ASSERT_EQ(wantGrad.size(), 3u);
    Operation *bwd = findOp(*module, "bwd");
    test::GoldenCase bwdCase;
    auto gotGrad = runKernel(bwd, bwdArgs, variants.front(),
                             keepingCases() ? &bwdCase : nullptr);
    ASSERT_EQ(gotGrad.size(), 3u);
    expectClose(gotGrad[0], wantGrad[0], 1e-5, "dq");
    expectClose(gotGrad[1], wantGrad[1], 1e-5, "dk");
    expectClose(gotGrad[2], wantGrad[2], 1e-5, "dv");
    if (c.rowsSumToOne) {
      const std::vector<float> &dv = gotGrad[2];
      const HostTensor &dout = bwdArgs[5];
      int64_t dvw = c.v.back(), sk = c.k[c.k.size() - 2];
      int64_t sq = c.q[c.q.size() - 2],
              batch = int64_t(dv.size()) / (sk * dvw);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < dvw; ++t) {
          double keys = 0, queries = 0;
          for (int64_t j = 0; j < sk; ++j)
            keys += dv[(b * sk + j) * dvw + t];
          for (int64_t i = 0; i < sq; ++i)
            queries += dout.data[(b * sq + i) * dvw + t];
          EXPECT_NEAR(keys, queries, 1e-4 * (1 + std::abs(queries)))
              << "batch entry " << b << ", channel " << t;
        }
    }
    keepCase(bwdCase, wantGrad);
    for (size_t i = 1; i < variants.size(); ++i)
      EXPECT_EQ(runKernel(bwd, bwdArgs, variants[i]), gotGrad)
          << variants[i].label << " differs from " << variants.front().label;
  }

  /// Whether this run keeps its cases for other devices (GoldenCase.h): the
  /// CPU's, with LOOM_GOLDEN_DIR set.
  bool keepingCases() const {
    return GetParam() == "cpu" && !test::goldenOutputDir().empty();
  }

  /// Writes `c`, a run of the first variant, with the interpreter's values.
  void keepCase(test::GoldenCase &c, const std::vector<HostTensor> &want) {
    if (!keepingCases())
      return;
    c.name = test::nextGoldenName();
    // The suite's 1e-5 is of each row's largest magnitude, at least 1; a
    // case holds one scale per result, the largest, with the same floor.
    c.rel = 1e-5;
    c.floor = 1;
    for (const HostTensor &w : want)
      c.want.push_back(w.data);
    Status written = test::writeGoldenCase(test::goldenOutputDir(), c);
    EXPECT_TRUE(written.ok()) << written.message();
  }

  /// Calls the forward (or backward) kernel on zeroed device tensors of the
  /// dtypes and shapes of `call.tensors` (whose data is ignored) on every
  /// variant, and expects it refused with `code` and a message holding
  /// `part`.
  void expectRefused(const runtime::LibraryCallArgs &call, bool backward,
                     const std::string &part,
                     ErrorCode code = ErrorCode::InvalidArgument) {
    for (const Variant &variant : variants) {
      SCOPED_TRACE(variant.label);
      std::vector<runtime::Tensor> owned;
      ErrorOr<runtime::LibraryCallArgs> placed =
          test::zeroedOnDevice(*variant.device, call, owned);
      ASSERT_TRUE(bool(placed));
      const char *kernel = backward ? "attention_grad" : "attention";
      Status status = variant.call
                          ? variant.call(*variant.device, kernel, *placed)
                          : callOnDevice(*variant.device, kernel, *placed);
      EXPECT_EQ(status.code(), code) << status.message();
      EXPECT_NE(status.message().find(part), std::string::npos)
          << "error \"" << status.message() << "\" lacks \"" << part << "\"";
    }
  }

  std::vector<Variant> variants;
};

INSTANTIATE_TEST_SUITE_P(DeviceAttention, AttentionKernels,
                         testing::ValuesIn(test::deviceKindsUnderTest()),
                         test::deviceKindName);

/// A forward call over tensors of the given shapes (no mask, no seed), f32
/// unless changed; expectRefused places them on the device.
struct RawCall {
  runtime::LibraryCallArgs call;
  RawCall(const std::vector<std::vector<int64_t>> &shapes) {
    for (const auto &shape : shapes)
      call.tensors.push_back({nullptr, DType::F32, shape});
    call.attrs.ints = {0, 0, 0, 0, 0};
    call.attrs.floats = {0.5, 0.0};
  }
};

//===----------------------------------------------------------------------===//
// Against the interpreter
//===----------------------------------------------------------------------===//

TEST_P(AttentionKernels, Rank3WithDvUnlikeD) {
  Case c;
  c.q = {2, 5, 8};
  c.k = {2, 7, 8};
  c.v = {2, 7, 6};
  c.scale = 0.35355339059327379;
  checkCase(c, 1);
}

TEST_P(AttentionKernels, Rank3CausalSquare) {
  Case c;
  c.q = c.k = c.v = {3, 19, 12};
  c.causal = true;
  checkCase(c, 2);
}

TEST_P(AttentionKernels, Rank4TrainingShapePaddingDropout) {
  // The base model's shape at a small batch: Sq = Sk = 30, D = 64.
  Case c;
  c.q = c.k = c.v = {3, 2, 30, 64};
  c.mask = {3, 1, 1, 30};
  c.scale = 0.125;
  c.rate = 0.1;
  checkCase(c, 3);
}

TEST_P(AttentionKernels, Rank4DecoderSelfAttention) {
  // Padding plus causal, with dropout, as the decoder's self-attention.
  Case c;
  c.q = c.k = c.v = {2, 3, 9, 16};
  c.mask = {2, 1, 1, 9};
  c.causal = true;
  c.rate = 0.1;
  checkCase(c, 4);
}

TEST_P(AttentionKernels, DecodeStepOverPaddedCache) {
  // One query over a cache of 11 keys.
  Case c;
  c.q = {4, 2, 1, 8};
  c.k = c.v = {4, 2, 11, 8};
  c.mask = {4, 1, 1, 11};
  checkCase(c, 5);
}

// A decoder's self-attention cache held position first, [T, N, K, H, D]:
// one query row per hypothesis, and four query rows (the transposed-block
// path) over a padded cache.
TEST_P(AttentionKernels, DecodeStepOverPositionFirstCache) {
  Case one;
  one.q = {3, 2, 2, 1, 8};
  one.k = one.v = {5, 3, 2, 2, 8};
  one.keysPositionMajor = true;
  Case four;
  four.q = {3, 2, 4, 8};
  four.k = {7, 3, 2, 8};
  four.v = {7, 3, 2, 6};
  four.mask = {3, 1, 1, 7};
  four.keysPositionMajor = true;
  if (GetParam() == "cuda") {
    // The CUDA kernel takes such keys transposed (the compiler keeps the
    // transpose for it), and says so.
    RawCall a({{3, 2, 2, 1, 8},
               {5, 3, 2, 2, 8},
               {5, 3, 2, 2, 8},
               {3, 2, 2, 1, 8},
               {3, 2, 2, 1}});
    a.call.attrs.ints[4] = 1;
    expectRefused(a.call, false, "not position first", ErrorCode::Unsupported);
    return;
  }
  checkCase(one, 21);
  checkCase(four, 22);
}

// One query (a decode step) over one key, over more keys than a block of
// 64 and not a multiple of 8 with a random mask that leaves one row nothing
// but masked keys and head dims unlike each other, a beam's few queries,
// and more keys than a query's scores keep on the stack (the tiled path).
TEST_P(AttentionKernels, DecodeStepOverFewAndManyKeys) {
  Case first;
  first.q = {2, 3, 1, 8};
  first.k = first.v = {2, 3, 1, 8};
  first.mask = {2, 1, 1, 1};
  checkCase(first, 24);
  Case many;
  many.q = {3, 4, 1, 16};
  many.k = {3, 4, 70, 16};
  many.v = {3, 4, 70, 24};
  many.mask = {3, 4, 1, 70};
  many.fill = MaskFill::MaskedRow;
  checkCase(many, 25);
  // A beam's four queries against its sentence's keys, causal too.
  Case beam;
  beam.q = {2, 3, 4, 16};
  beam.k = {2, 3, 21, 16};
  beam.v = {2, 3, 21, 8};
  beam.mask = {2, 3, 4, 21};
  beam.fill = MaskFill::Random;
  beam.causal = true;
  checkCase(beam, 27);
  Case longest;
  longest.q = {1, 2, 1, 8};
  longest.k = longest.v = {1, 2, 1100, 8};
  longest.mask = {1, 1, 1, 1100};
  checkCase(longest, 26);
}

// A decoder's caches held in bf16 (--precision bf16): the self-attention
// cache position first, one query per hypothesis (head dims of 16, and of 64
// and 48: widened sixteen at a time, split even and odd); a beam's four queries
// (transposed key blocks); the cross-attention keys behind a padding mask;
// a head dim that is not a multiple of 8 and more keys than a row keeps on
// the stack (the tiled path, widened block by block).
TEST_P(AttentionKernels, DecodeStepOverBf16Caches) {
  if (GetParam() == "cuda") {
    RawCall a(
        {{3, 2, 1, 8}, {3, 2, 5, 8}, {3, 2, 5, 8}, {3, 2, 1, 8}, {3, 2, 1}});
    a.call.tensors[1].dtype = a.call.tensors[2].dtype = DType::BF16;
    expectRefused(a.call, false, "reads f32 keys", ErrorCode::Unsupported);
    return;
  }
  Case self;
  self.q = {3, 2, 2, 1, 16};
  self.k = self.v = {5, 3, 2, 2, 16};
  self.keysPositionMajor = self.bf16Keys = true;
  checkCase(self, 41);
  // Head dims of 64 and 48 (thirty-two channels at a time, then sixteen).
  Case wideHeads;
  wideHeads.q = {2, 3, 2, 1, 64};
  wideHeads.k = {9, 2, 3, 2, 64};
  wideHeads.v = {9, 2, 3, 2, 48};
  wideHeads.keysPositionMajor = wideHeads.bf16Keys = true;
  checkCase(wideHeads, 47);
  Case beam;
  beam.q = {3, 2, 4, 8};
  beam.k = {7, 3, 2, 8};
  beam.v = {7, 3, 2, 16};
  beam.mask = {3, 1, 1, 7};
  beam.keysPositionMajor = beam.bf16Keys = true;
  checkCase(beam, 42);
  Case cross;
  cross.q = {4, 2, 3, 32};
  cross.k = cross.v = {4, 2, 13, 32};
  cross.mask = {4, 1, 1, 13};
  cross.bf16Keys = true;
  checkCase(cross, 43);
  Case odd;
  odd.q = {2, 2, 1, 12};
  odd.k = odd.v = {2, 2, 9, 12};
  odd.bf16Keys = true;
  checkCase(odd, 44);
  Case tiles;
  tiles.q = {1, 2, 2, 8};
  tiles.k = tiles.v = {1, 2, 1100, 8};
  tiles.mask = {1, 1, 1, 1100};
  tiles.bf16Keys = true;
  checkCase(tiles, 45);
  Case queries;
  queries.q = {2, 1, 70, 16};
  queries.k = queries.v = {2, 1, 70, 16};
  queries.causal = queries.bf16Keys = true;
  checkCase(queries, 46);
}

TEST_P(AttentionKernels, RefusesBf16KeysWhereTheyAreNotRead) {
  // k and v of two types.
  RawCall mixed(
      {{3, 2, 1, 8}, {3, 2, 5, 8}, {3, 2, 5, 8}, {3, 2, 1, 8}, {3, 2, 1}});
  mixed.call.tensors[1].dtype = DType::BF16;
  expectRefused(mixed.call, false, "v must be bf16");
  // The backward reads f32 only: narrow keys are for inference.
  RawCall grad({{3, 2, 1, 8},
                {3, 2, 5, 8},
                {3, 2, 5, 8},
                {3, 2, 1, 8},
                {3, 2, 1},
                {3, 2, 1, 8},
                {3, 2, 1, 8},
                {3, 2, 5, 8},
                {3, 2, 5, 8}});
  grad.call.tensors[1].dtype = grad.call.tensors[2].dtype = DType::BF16;
  expectRefused(grad.call, true, "k must be f32");
}

TEST_P(AttentionKernels, RefusesPositionFirstKeysThatDoNotFit) {
  // Keys position first whose leading dims are not q's.
  RawCall a(
      {{3, 2, 1, 8}, {5, 2, 3, 8}, {5, 2, 3, 8}, {3, 2, 1, 8}, {3, 2, 1}});
  a.call.attrs.ints[4] = 1;
  expectRefused(a.call, false, "(keys position first)");
  // ... and the backward, which has no such layout.
  RawCall b({{3, 1, 8},
             {5, 3, 8},
             {5, 3, 8},
             {3, 1, 8},
             {3, 1},
             {3, 1, 8},
             {3, 1, 8},
             {5, 3, 8},
             {5, 3, 8}});
  b.call.attrs.ints[4] = 1;
  expectRefused(b.call, true, "for inference only");
}

TEST_P(AttentionKernels, DecodeStepCausalSeesOnlyKeyZero) {
  // Causal counts from the first key: with Sq = 1 only key 0 is visible.
  Case c;
  c.q = {2, 2, 1, 8};
  c.k = {2, 2, 6, 8};
  c.v = {2, 2, 6, 5};
  c.causal = true;
  checkCase(c, 6);
}

TEST_P(AttentionKernels, FullMaskWithFullyMaskedRow) {
  Case c;
  c.q = c.k = c.v = {2, 2, 6, 8};
  c.mask = {2, 2, 6, 6};
  c.fill = MaskFill::MaskedRow;
  checkCase(c, 7);
}

TEST_P(AttentionKernels, FullMaskCausalDropoutMaskedRow) {
  Case c;
  c.q = {2, 2, 7, 8};
  c.k = c.v = {2, 2, 7, 8};
  c.mask = {2, 2, 7, 7};
  c.fill = MaskFill::MaskedRow;
  c.causal = true;
  c.rate = 0.1;
  checkCase(c, 8);
}

// A row whose every key is masked, with scores far from 0: its lse, near
// -1e9, is a float only to 64, so the backward recomputes it from the
// scores (the gradients were off by up to e^32: 1e37 in a model).
TEST_P(AttentionKernels, FullyMaskedRowWithLargeScores) {
  Case c;
  c.q = c.k = c.v = {2, 2, 6, 8};
  c.mask = {2, 2, 6, 6};
  c.fill = MaskFill::MaskedRow;
  c.spread = 4;
  c.scale = 0.5;
  c.rowsSumToOne = true;
  checkCase(c, 9);
}

TEST_P(AttentionKernels, LowerRankMasksBroadcast) {
  // [Sq, Sk] against rank-4 scores, then [Sk] alone.
  Case c;
  c.q = {2, 3, 5, 8};
  c.k = c.v = {2, 3, 9, 8};
  c.mask = {5, 9};
  c.fill = MaskFill::Random;
  checkCase(c, 9);
  c.mask = {9};
  checkCase(c, 10);
  c.mask = {2, 1, 5, 1};
  checkCase(c, 11);
}

TEST_P(AttentionKernels, LongCrossAttentionPaddingDropout) {
  // 1000 keys: 16 key blocks, the last one partial; padding masks the tail
  // blocks of the second sentence entirely.
  Case c;
  c.q = {2, 2, 70, 16};
  c.k = c.v = {2, 2, 1000, 16};
  c.mask = {2, 1, 1, 1000};
  c.rate = 0.1;
  c.spread = 3;
  checkCase(c, 12);
}

TEST_P(AttentionKernels, LongSelfAttentionCausalDropout) {
  // Several query tiles and key blocks; causal skips the blocks above the
  // diagonal.
  Case c;
  c.q = c.k = c.v = {1, 2, 1000, 32};
  c.causal = true;
  c.rate = 0.1;
  c.scale = 0.17677669529663687;
  checkCase(c, 13);
}

//===----------------------------------------------------------------------===//
// Dropout, encoding, errors
//===----------------------------------------------------------------------===//

TEST_P(AttentionKernels, DropoutKeepsWhatTheInterpreterKeeps) {
  // With v the identity, out[i][j] is the kept probability of key j: zero
  // exactly where the element was dropped.
  const int64_t b = 3, s = 24;
  Case c;
  c.q = c.k = {b, s, 4};
  c.v = {b, s, s};
  c.rate = 0.3;
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, moduleText(c));
  ASSERT_TRUE(module);
  std::mt19937 rng(14);
  HostTensor eye(c.v, DType::F32);
  for (int64_t e = 0; e < b; ++e)
    for (int64_t j = 0; j < s; ++j)
      eye.data[(e * s + j) * s + j] = 1;
  int64_t seed = 987654321;
  std::vector<HostTensor> args = {randomTensor(rng, c.q),
                                  randomTensor(rng, c.k), eye,
                                  HostTensor::scalar(seed, DType::I64)};
  auto want = interpret(*module, "fwd", args);
  ASSERT_EQ(want.size(), 2u);
  uint64_t key = dropoutKey(seed, 5);
  int64_t dropped = 0;
  for (int64_t i = 0; i < b * s * s; ++i) {
    bool keep = dropoutKeep(key, i, c.rate);
    dropped += !keep;
    EXPECT_EQ(want[0].data[i] != 0.0, keep) << "element " << i;
  }
  EXPECT_GT(dropped, b * s * s / 5);
  for (const Variant &variant : variants) {
    SCOPED_TRACE(variant.label);
    auto got = runKernel(findOp(*module, "fwd"), args, variant);
    ASSERT_EQ(got.size(), 2u);
    int64_t wrong = 0;
    for (int64_t i = 0; i < b * s * s; ++i)
      if ((got[0][i] != 0.0f) != dropoutKeep(key, i, c.rate) && wrong++ < 5)
        ADD_FAILURE() << "element " << i << " is " << got[0][i];
    EXPECT_EQ(wrong, 0);
  }
}

TEST(AttentionEncoding, EncodesOperandsResultsAndAttributes) {
  Case c;
  c.q = {2, 4, 8};
  c.k = c.v = {2, 6, 8};
  c.mask = {2, 1, 6};
  c.causal = true;
  c.rate = 0.25;
  c.scale = 0.5;
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, moduleText(c));
  ASSERT_TRUE(module);
  Operation *fwd = findOp(*module, "fwd"), *bwd = findOp(*module, "bwd");
  auto f = encodeAttentionCall(fwd);
  ASSERT_TRUE(succeeded(f));
  EXPECT_EQ(f->kernel, "attention");
  EXPECT_EQ(f->attrs.ints, (std::vector<int64_t>{1, 1, 1, 5, 0}));
  EXPECT_EQ(f->attrs.floats, (std::vector<double>{0.5, 0.25}));
  ErrorOr<loom::abi::AttentionCall> decoded =
      loom::abi::AttentionCall::decode(f->attrs);
  ASSERT_TRUE(bool(decoded)) << decoded.error();
  EXPECT_TRUE(decoded->hasMask && decoded->hasSeed && decoded->causal);
  EXPECT_EQ(decoded->dropoutOffset, 5u);
  EXPECT_EQ(decoded->scale, 0.5);
  EXPECT_EQ(decoded->dropoutRate, 0.25);
  std::vector<Value> fwdArgs(fwd->operand_begin(), fwd->operand_end());
  fwdArgs.insert(fwdArgs.end(), fwd->result_begin(), fwd->result_end());
  EXPECT_EQ(f->args, fwdArgs);
  EXPECT_EQ(f->args.size(), 7u);
  auto g = encodeAttentionCall(bwd);
  ASSERT_TRUE(succeeded(g));
  EXPECT_EQ(g->kernel, "attention_grad");
  EXPECT_EQ(g->attrs.ints, (std::vector<int64_t>{1, 1, 1, 5, 0}));
  EXPECT_EQ(g->args.size(), 11u);
  EXPECT_EQ(g->args[8], bwd->getResult(0));

  // Without the optional operands the flags say so.
  Case plain;
  plain.q = plain.k = plain.v = {1, 3, 4};
  auto module2 = test::parse(*ctx, moduleText(plain));
  ASSERT_TRUE(module2);
  auto p = encodeAttentionCall(findOp(*module2, "bwd"));
  ASSERT_TRUE(succeeded(p));
  EXPECT_EQ(p->attrs.ints, (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(p->args.size(), 9u);
}

TEST(AttentionEncoding, RefusesOtherOpsAndF16) {
  auto ctx = test::makeContext();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  const char *text = R"mlir(
func.func @f(%q: tensor<1x3x4xf16>) -> tensor<1x3x4xf16> {
  %o, %lse = loom.attention %q, %q, %q {scale = 1.0 : f64}
      : tensor<1x3x4xf16>, tensor<1x3x4xf16>, tensor<1x3x4xf16> -> tensor<1x3x4xf16>, tensor<1x3xf16>
  %n = loom.neg %o : (tensor<1x3x4xf16>) -> tensor<1x3x4xf16>
  return %n : tensor<1x3x4xf16>
}
)mlir";
  auto module = test::parse(*ctx, text);
  ASSERT_TRUE(module);
  Operation *attention = findOp(*module, "f");
  EXPECT_TRUE(failed(encodeAttentionCall(attention)));
  EXPECT_NE(diagnostics.find("runs in f32"), std::string::npos) << diagnostics;
  Operation *neg = attention->getNextNode();
  EXPECT_TRUE(failed(encodeAttentionCall(neg)));
  EXPECT_NE(diagnostics.find("is not loom.attention"), std::string::npos)
      << diagnostics;
}

TEST(CpuAttention, RegisteredByName) {
  EXPECT_EQ(cpu::findLibraryKernel("attention"), &cpu::attentionForward);
  EXPECT_EQ(cpu::findLibraryKernel("attention_grad"), &cpu::attentionBackward);
}

TEST_P(AttentionKernels, RefusesMismatchedShapes) {
  // k's head dim differs from q's.
  RawCall a({{2, 3, 8}, {2, 5, 6}, {2, 5, 8}, {2, 3, 8}, {2, 3}});
  expectRefused(a.call, false,
                "q [2, 3, 8], k [2, 5, 6] and v [2, 5, 8] do not fit");
  // v has fewer keys than k.
  RawCall b({{2, 3, 8}, {2, 5, 8}, {2, 4, 8}, {2, 3, 8}, {2, 3}});
  expectRefused(b.call, false, "do not fit [..., Sq, D], [..., Sk, D]");
  // Leading dims differ.
  RawCall c({{2, 3, 8}, {3, 5, 8}, {3, 5, 8}, {2, 3, 8}, {2, 3}});
  expectRefused(c.call, false, "equal leading dims");
  // A result of the wrong shape.
  RawCall d({{2, 3, 8}, {2, 5, 8}, {2, 5, 4}, {2, 3, 8}, {2, 3}});
  expectRefused(d.call, false, "out is [2, 3, 8], expected [2, 3, 4]");
  // A mask that does not broadcast to [2, 3, 5].
  RawCall e({{2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {4, 1}, {2, 3, 8}, {2, 3}});
  e.call.attrs.ints[0] = 1;
  expectRefused(e.call, false,
                "mask [4, 1] does not broadcast to the scores [2, 3, 5]");
  // Too few tensors for the flags.
  RawCall f({{2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {2, 3, 8}, {2, 3}});
  f.call.attrs.ints[1] = 1;
  expectRefused(f.call, false, "expects 6 tensors, got 5");
  // Dropout without a seed.
  RawCall g({{2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {2, 3, 8}, {2, 3}});
  g.call.attrs.floats[1] = 0.1;
  expectRefused(g.call, false, "dropout needs a seed");
  // Not f32.
  RawCall h({{2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {2, 3, 8}, {2, 3}});
  h.call.tensors[1].dtype = DType::F16;
  expectRefused(h.call, false, "k must be f32");
  // The backward checks lse against the queries.
  RawCall i({{2, 3, 8},
             {2, 5, 8},
             {2, 5, 8},
             {2, 3, 8},
             {2, 4},
             {2, 3, 8},
             {2, 3, 8},
             {2, 5, 8},
             {2, 5, 8}});
  expectRefused(i.call, true, "attention_grad: lse is [2, 4], expected [2, 3]");
}

TEST_P(AttentionKernels, RefusesDamagedAttributes) {
  // The shapes fit; only the attributes are wrong.
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 3, 8}, {2, 5, 8}, {2, 5, 8}, {2, 3, 8}, {2, 3}};
  RawCall rate(shapes);
  rate.call.attrs.floats[1] = 1.5;
  expectRefused(rate.call, false, "attention: dropout rate",
                ErrorCode::Corrupt);
  RawCall negative(shapes);
  negative.call.attrs.floats[1] = -0.25;
  expectRefused(negative.call, false, "outside [0, 1)", ErrorCode::Corrupt);
  RawCall flag(shapes);
  flag.call.attrs.ints[2] = 3;
  expectRefused(flag.call, false, "flag causal is 3", ErrorCode::Corrupt);
  RawCall scale(shapes);
  scale.call.attrs.floats[0] = std::nan("");
  expectRefused(scale.call, false, "scale is not finite", ErrorCode::Corrupt);
  RawCall missing(shapes);
  missing.call.attrs.ints.pop_back();
  expectRefused(missing.call, false, "expected 5 integer and 2 float",
                ErrorCode::Corrupt);
  // The backward decodes the same struct and names itself.
  RawCall backward({{2, 3, 8},
                    {2, 5, 8},
                    {2, 5, 8},
                    {2, 3, 8},
                    {2, 3},
                    {2, 3, 8},
                    {2, 3, 8},
                    {2, 5, 8},
                    {2, 5, 8}});
  backward.call.attrs.floats = {0.5};
  expectRefused(backward.call, true, "attention_grad: expected 5 integer",
                ErrorCode::Corrupt);
}

} // namespace
