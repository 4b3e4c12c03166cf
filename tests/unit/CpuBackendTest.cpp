//===- CpuBackendTest.cpp - Compiled CPU executables against the oracle ---===//
//
// The whole model compiled for the CPU (generated region kernels, library
// kernels, the planned arena) must compute what the reference interpreter
// computes on the same planned module: every entry point of `tiny` and of
// `small` (dropout on, so generated and library dropout must draw the
// interpreter's masks) agrees to 1e-4 relative for random parameters, Adam
// state and inputs. The train step's new parameters are read back from the
// model's state, which the step updates in place. "tiny+bf16" is the
// mixed-precision training step (loom-mixed-precision: bf16 factors, f32
// sums), run where the CPU has no bf16 units through LOOM_CPU_EMULATE_BF16;
// its training entries must match the interpreter's evaluation of the same
// casts and products. "tiny+bf16caches" holds the decoder's caches in bf16
// (loom-cache-precision): @encode's and @decode_step's bf16 caches must be
// the interpreter's to within a bf16 rounding, and their attention what the
// interpreter computes from them.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"
#include "TestUtil.h"

#include "codegen/cpu/ExecutableWriter.h"
#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"
#include "runtime/Decoding.h"
#include "runtime/Executable.h"
#include "runtime/Session.h"
#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/CpuFeatures.h"

#include "mlir/IR/Verifier.h"
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

using namespace loom;

namespace {

runtime::Tensor toCpu(const HostTensor &t) {
  DType dtype = t.kind == DType::I32 || t.kind == DType::I64 ||
                        t.kind == DType::I1 || t.kind == DType::BF16
                    ? t.kind
                    : DType::F32;
  runtime::Tensor out = test::hostTensor(dtype, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (out.dtype()) {
    case DType::I32:
      static_cast<int32_t *>(out.data())[i] = int32_t(t.data[i]);
      break;
    case DType::I64:
      static_cast<int64_t *>(out.data())[i] = int64_t(t.data[i]);
      break;
    case DType::I1:
      static_cast<uint8_t *>(out.data())[i] = t.data[i] != 0;
      break;
    case DType::BF16:
      static_cast<uint16_t *>(out.data())[i] =
          cpu::bf16FromFloat(float(t.data[i]));
      break;
    default:
      out.f32()[i] = float(t.data[i]);
    }
  }
  return out;
}

/// sqrt(sum (a - b)^2) / sqrt(sum b^2) over f32 data.
double relativeError(const float *actual, const HostTensor &expected) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double d = double(actual[i]) - expected.data[i];
    diff += d * d;
    norm += expected.data[i] * expected.data[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

HostTensor randomFloats(std::mt19937_64 &rng, std::vector<int64_t> shape,
                        double scale = 1.0) {
  HostTensor t(std::move(shape), DType::F32);
  std::normal_distribution<double> normal(0.0, scale);
  for (double &x : t.data)
    x = roundToKind(normal(rng), DType::F32);
  return t;
}

class CpuBackendTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    ctx = test::makeContext();
    // "tiny+clip": the preset with gradient clipping at a norm its random
    // gradients exceed, so that the clipped step is the one compiled.
    llvm::StringRef preset = GetParam();
    bool clipped = preset.consume_back("+clip");
    narrowCaches = preset.consume_back("+bf16caches");
    bf16 = preset.consume_back("+bf16");
    if (bf16)
      emulate.emplace(cpu::kEmulateBf16Env, "1");
    auto parsed = presetConfig(preset.str());
    ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
    config = *parsed;
    CompilePipelineOptions options;
    // The CPU reads the decoder caches position first where they lie.
    options.keysPositionMajor = true;
    options.training.dModel = config.d_model();
    options.training.warmup = 10;
    if (clipped)
      options.training.clipNorm = 0.05;
    if (bf16)
      options.training.precision = "bf16";
    if (narrowCaches)
      options.cachePrecision = "bf16";
    options.maxTokens = 64;
    options.maxLen = 16;
    options.maxBatch = 8;
    module = buildModelModule(*ctx, config);
    ASSERT_TRUE(module);
    ASSERT_TRUE(mlir::succeeded(runCompilePipeline(*module, options)));
    CpuExecutableOptions exeOptions;
    exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
    auto exe = writeCpuExecutable(*module, exeOptions);
    ASSERT_TRUE(mlir::succeeded(exe));
    executable = *exe;
    model = test::cpuSession(std::move(*exe), 2);
    ASSERT_TRUE(model);
    oracle = std::make_unique<InterpretedModel>(*module);
    oracle->initParameters(3);
  }

  /// Sets the CPU model's parameters and optimizer state to the oracle's
  /// parameters and to `inputs`' moments.
  void resetState(const NamedTensors &inputs) {
    for (const std::string &name : model->stateNames()) {
      runtime::Tensor *state = model->state(name);
      auto param = oracle->parameters().find(name);
      if (param == oracle->parameters().end() && !inputs.count(name)) {
        // Optimizer state the entry point does not take.
        std::memset(state->data(), 0, state->bytes());
        continue;
      }
      const HostTensor &value =
          param != oracle->parameters().end() ? param->second : inputs.at(name);
      ASSERT_EQ(value.shape, state->shape()) << name;
      runtime::Tensor converted = toCpu(value);
      std::memcpy(state->data(), converted.data(), state->bytes());
    }
  }

  void expectSameResults(const std::string &fn, const NamedTensors &inputs) {
    SCOPED_TRACE("@" + fn);
    auto expected = oracle->call(fn, inputs);
    ASSERT_TRUE(bool(expected)) << llvm::toString(expected.takeError());
    resetState(inputs);
    std::vector<runtime::Tensor> owned;
    std::vector<runtime::TensorRef> refs;
    for (const std::string &name : model->inputNames(fn)) {
      ASSERT_TRUE(inputs.count(name)) << name;
      owned.push_back(toCpu(inputs.at(name)));
    }
    for (const runtime::Tensor &t : owned)
      refs.push_back(t.ref());
    auto actual = model->run(fn, refs);
    ASSERT_TRUE(bool(actual)) << actual.error();
    std::map<std::string, const runtime::Tensor *> byName;
    for (const runtime::NamedTensor &t : *actual)
      byName[t.name] = &t.tensor;
    for (auto &[name, value] : *expected) {
      const runtime::Tensor *got = nullptr;
      if (auto it = byName.find(name); it != byName.end())
        got = it->second;
      else if (llvm::StringRef(name).starts_with("param."))
        got = model->state(name.substr(6));
      else
        got = model->state(name);
      ASSERT_NE(got, nullptr) << "no result " << name;
      ASSERT_EQ(got->shape(), value.shape) << name;
      if (got->dtype() == DType::BF16) {
        // Rounded from f32 values that are the interpreter's to 1e-6 or so:
        // an element may land one bf16 step (2^-8 relative) away.
        std::vector<float> wide(got->numel());
        for (size_t i = 0; i < wide.size(); ++i)
          wide[i] =
              cpu::floatFromBf16(static_cast<const uint16_t *>(got->data())[i]);
        EXPECT_LT(relativeError(wide.data(), value), 1e-3) << name;
        continue;
      }
      if (got->dtype() != DType::F32) {
        runtime::Tensor want = toCpu(value);
        EXPECT_EQ(std::memcmp(got->data(), want.data(), want.bytes()), 0)
            << name;
        continue;
      }
      // Through bf16 factors, 1e-4 holds only while every factor rounds
      // as the interpreter's (which computes in double) does: where the
      // two straddle a rounding boundary, the factor lands one bf16 step
      // (2^-8 relative) away, and every sum downstream carries it (the
      // encoder's gradients on an AVX-512 CPU: 1.4e-3). Within one step.
      EXPECT_LT(relativeError(got->f32(), value), bf16 ? 0x1p-8 : 1e-4) << name;
    }
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  TransformerConfig config;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  runtime::Executable executable;
  std::unique_ptr<runtime::Session> model;
  std::unique_ptr<InterpretedModel> oracle;
  bool bf16 = false, narrowCaches = false;
  std::optional<test::ScopedEnv> emulate;
};

TEST_P(CpuBackendTest, EveryEntryPointMatchesTheInterpreter) {
  std::mt19937_64 rng(11);
  int64_t vocab = std::min(config.src_vocab(), config.tgt_vocab());
  HostTensor src = test::randomIds(rng, vocab, {5, 3, 4}, 5, false);
  HostTensor tgt = test::randomIds(rng, vocab, {6, 4, 2}, 6, true);
  NamedTensors inputs = {{"src", src},
                         {"tgt", tgt},
                         {"seed", HostTensor::scalar(1234, DType::I64)},
                         {"step", HostTensor::scalar(3, DType::I64)}};
  for (auto &[name, value] : oracle->parameters()) {
    inputs["exp_avg." + name] = randomFloats(rng, value.shape, 1e-2);
    HostTensor v = randomFloats(rng, value.shape, 1e-2);
    for (double &x : v.data)
      x = roundToKind(x * x, DType::F32);
    inputs["exp_avg_sq." + name] = v;
  }
  for (const char *fn :
       {"loss", "loss_grad", "train_step", "token_log_probs", "encode"}) {
    // A bf16 executable's decoding entries round their weights when they
    // pack them (the runtime's doing, not the module's): the interpreter
    // has nothing to say about them.
    if (bf16 && std::string(fn) != "loss" && std::string(fn) != "loss_grad" &&
        std::string(fn) != "train_step")
      continue;
    expectSameResults(fn, inputs);
  }
  if (bf16)
    return;

  // One decoding step of two hypotheses per sentence after two cached
  // positions.
  auto encoded = oracle->call("encode", inputs);
  ASSERT_TRUE(bool(encoded)) << llvm::toString(encoded.takeError());
  NamedTensors step = *encoded;
  step["src"] = src;
  for (auto &[name, value] : *encoded) {
    // [N, H, S, Dh] -> [T = 2, N, 2, H, Dh], position first.
    std::vector<int64_t> shape = {2, value.shape[0], 2, value.shape[1],
                                  value.shape[3]};
    EXPECT_EQ(value.kind, narrowCaches ? DType::BF16 : DType::F32) << name;
    HostTensor self = randomFloats(rng, shape);
    // Held as the cross caches are (bf16 with +bf16caches).
    self.kind = value.kind;
    for (double &x : self.data)
      x = roundToKind(x, value.kind);
    step["self_" + name.substr(std::string("cross_").size())] = self;
  }
  step["tokens"] = test::randomIds(rng, vocab, {2, 2, 2}, 2, false);
  step["position"] = HostTensor::scalar(2, DType::I64);
  // The second sentence joined after the first position: it reads only
  // the second and its own.
  step["start"] = HostTensor({3}, DType::I64);
  step["start"].data = {0, 1, 0};
  expectSameResults("decode_step", step);
}

// A session sharing the model's state (a translator's second worker) reads
// the parameters in place: it decodes on its own thread, at the same time as
// the owner, exactly what the owner decodes, and keeps the state after the
// owner is gone; neither writes the shared state any more.
TEST_P(CpuBackendTest, ASessionSharingTheStateDecodesAsTheOwnerDoes) {
  resetState({});
  auto sharing = runtime::Session::createSharing(
      *model, std::make_shared<cpu::CpuDevice>(1));
  ASSERT_TRUE(bool(sharing)) << sharing.error();
  std::mt19937_64 rng(17);
  int64_t vocab = std::min(config.src_vocab(), config.tgt_vocab());
  runtime::Tensor src = toCpu(test::randomIds(rng, vocab, {6, 5}, 6, false));
  runtime::BeamOptions options;
  options.beam = 2;
  options.maxLen = 8;
  auto expected = runtime::beamSearch(*model, src.ref(), options);
  ASSERT_TRUE(bool(expected)) << expected.error();
  auto tokensOf = [](const std::vector<std::vector<runtime::Hypothesis>> &r) {
    std::vector<std::vector<int32_t>> tokens;
    for (const auto &sentence : r)
      for (const runtime::Hypothesis &h : sentence)
        tokens.push_back(h.tokens);
    return tokens;
  };
  bool ownerAgrees = true;
  std::thread owner([&] {
    for (int i = 0; i < 3; ++i) {
      auto again = runtime::beamSearch(*model, src.ref(), options);
      ownerAgrees =
          ownerAgrees && again && tokensOf(*again) == tokensOf(*expected);
    }
  });
  for (int i = 0; i < 3; ++i) {
    auto shared = runtime::beamSearch(**sharing, src.ref(), options);
    ASSERT_TRUE(bool(shared)) << shared.error();
    EXPECT_EQ(tokensOf(*shared), tokensOf(*expected));
  }
  owner.join();
  EXPECT_TRUE(ownerAgrees);

  // Read-only, for both.
  const std::string name = model->parameterNames().front();
  for (runtime::Session *session : {model.get(), sharing->get()}) {
    EXPECT_EQ(session->state(name), nullptr);
    auto value = session->getState(name);
    ASSERT_TRUE(bool(value)) << value.error();
    Status refused = session->setState(name, value->ref());
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("shared"), std::string::npos)
        << refused.message();
    auto trained = session->run("train_step", {});
    ASSERT_FALSE(bool(trained));
    EXPECT_NE(trained.error().find("writes state"), std::string::npos)
        << trained.error();
  }

  model.reset();
  auto after = runtime::beamSearch(**sharing, src.ref(), options);
  ASSERT_TRUE(bool(after)) << after.error();
  EXPECT_EQ(tokensOf(*after), tokensOf(*expected));
}

TEST_P(CpuBackendTest, RefusesBadInputsWithAMessage) {
  std::mt19937_64 rng(5);
  int64_t vocab = std::min(config.src_vocab(), config.tgt_vocab());
  runtime::Tensor src = toCpu(test::randomIds(rng, vocab, {3, 2}, 3, false));
  runtime::Tensor tgt = toCpu(test::randomIds(rng, vocab, {4, 4, 4}, 4, true));

  auto run = [&](std::vector<runtime::TensorRef> refs) {
    auto out = model->run("token_log_probs", refs);
    EXPECT_FALSE(bool(out));
    return out ? std::string() : out.error();
  };
  // Batch 2 against batch 3.
  EXPECT_NE(run({src.ref(), tgt.ref()}).find("agree"), std::string::npos);
  // Ids as i64.
  runtime::Tensor src64 = test::hostTensor(DType::I64, src.shape());
  EXPECT_NE(run({src64.ref(), tgt.ref()}).find("is i64, expected i32"),
            std::string::npos);
  // Too few inputs, an unknown entry point.
  EXPECT_NE(run({src.ref()}).find("takes 2 inputs"), std::string::npos);
  auto unknown = model->run("no_such_fn", {});
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(unknown.error().find("no entry point"), std::string::npos);
  // 8 sentences of 9 tokens: more than the 64 tokens planned for.
  HostTensor many =
      test::randomIds(rng, vocab, std::vector<int64_t>(8, 9), 9, false);
  runtime::Tensor manyIds = toCpu(many);
  std::string bounds = run({manyIds.ref(), manyIds.ref()});
  EXPECT_NE(bounds.find("larger than"), std::string::npos) << bounds;
  EXPECT_NE(bounds.find("max-tokens 64"), std::string::npos) << bounds;
}

/// Why the runtime refuses `exe` (validation, or a CPU session), or "".
std::string createError(runtime::Executable exe) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program)
    return program.error();
  auto created =
      runtime::Session::create(*program, std::make_shared<cpu::CpuDevice>(1));
  return created ? std::string() : created.error();
}

TEST_P(CpuBackendTest, RefusesMismatchedExecutables) {
  runtime::Executable exe = executable;
  int generated = -1, library = -1;
  for (int k = 0; k < exe.kernels_size(); ++k)
    (exe.kernels(k).kind() == runtime::Kernel::GENERATED ? generated
                                                         : library) = k;
  ASSERT_GE(generated, 0);
  ASSERT_GE(library, 0);

  // Code from another executable: its symbols are not this one's.
  exe.mutable_kernels(generated)->set_symbol("loom_kernel_absent");
  EXPECT_NE(createError(exe).find("not in the executable's code"),
            std::string::npos)
      << createError(exe);
  exe = executable;
  exe.mutable_kernels(library)->set_symbol("no_such_kernel");
  EXPECT_NE(createError(exe).find("no library kernel 'no_such_kernel'"),
            std::string::npos);
  exe = executable;
  test::retargetToCuda(exe);
  EXPECT_NE(createError(exe).find("targets CUDA, but the device 'cpu' runs "
                                  "CPU"),
            std::string::npos)
      << createError(exe);
  exe = executable;
  exe.set_code(exe.code() + "x");
  EXPECT_NE(createError(exe).find("code checksum mismatch"), std::string::npos);
  exe = executable;
  exe.mutable_entry_points(0)->mutable_steps(0)->add_args(0);
  EXPECT_NE(createError(exe).find("arguments"), std::string::npos);
}

TEST_P(CpuBackendTest, RefusesDamagedFiles) {
  std::string path =
      ::testing::TempDir() + "/cpu-backend-" + GetParam() + ".loomx";
  Status saved = saveExecutable(path, executable);
  ASSERT_TRUE(saved.ok()) << saved.message();
  auto loaded = loadExecutable(path);
  ASSERT_TRUE(bool(loaded)) << loaded.error();
  EXPECT_EQ(createError(*loaded), "");

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  auto write = [&](const std::string &content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), content.size());
  };
  for (size_t n : {size_t(0), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    write(bytes.substr(0, n));
    auto truncated = loadExecutable(path);
    ASSERT_FALSE(bool(truncated)) << n;
    EXPECT_FALSE(truncated.error().empty());
  }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 64; ++i) {
    std::string flipped = bytes;
    size_t bit = rng() % (bytes.size() * 8);
    flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    write(flipped);
    auto damaged = loadExecutable(path);
    ASSERT_FALSE(bool(damaged)) << "bit " << bit;
    EXPECT_NE(damaged.error().find(path), std::string::npos);
  }
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Presets, CpuBackendTest,
                         ::testing::Values("tiny", "small", "tiny+clip",
                                           "tiny+bf16", "tiny+bf16caches"));

} // namespace
