//===- DeviceAgreementTest.cpp - A model on the GPU against the CPU -------===//
//
// A model compiled twice by `loom compile`, for the CPU and for CUDA, as
// <model>-cpu.loomx and <model>-cuda.loomx (the build writes `tiny`'s; the
// device bundle may add `base`'s; LOOM_DEVICE_DATA names the folder), runs
// on each device from the same parameters and inputs (the kernel replay's
// reference is <model>-cpu-cuda-layouts.loomx, the CPU executable with the
// CUDA one's steps):
//
//   ScoresAgree     @token_log_probs of a batch: every log-probability
//   GradientsAgree  @loss_grad of a batch: the loss and every parameter's
//                   gradient, each checked on its own, so a wrong kernel
//                   shows by the parameters it feeds
//   TrainingAgrees  three @train_step calls: each loss, then every
//                   parameter and Adam moment
//   DecodingAgrees  greedy decoding: the same tokens
//   EveryKernelAgreesAlone
//                   every step of a training step, of @loss and
//                   @loss_grad, of scoring and of greedy decoding,
//                   replayed alone on the device under test with the CPU's
//                   inputs (KernelReplay.h): a failure names the kernel,
//                   the step and the element; every kernel of the
//                   executable must have been replayed
//
// The CPU side is held to the interpreter and PyTorch by the other tests, so
// agreement here carries those checks to the GPU's generated kernels,
// library kernels and decoding primitives at once. Only the runtime is
// linked: the test runs on a GPU machine without LLVM or MLIR, and skips
// where there is no GPU. With LOOM_AGREEMENT_DEVICE=cpu the other side is
// the CPU executable on a one-thread CPU device instead (ctest runs that
// too): the CPU's results must not depend on its thread count, and the
// harness itself runs where no GPU is.
//
// Tolerances: the devices sum in different orders (warp trees against
// sequential loops), so fp32 results differ in their last bits; 1e-4
// relative to the tensor's RMS covers that for one forward pass. A gradient
// goes through the forward and then the whole depth again in reverse, and
// an embedding's gradient sums the contributions of every position its
// token holds, which cancel: on an H200 the source embedding of `base` (6+6
// layers, d_model 512) differed from the CPU by 1.1e-4 of its RMS, every
// other gradient by less. Gradients get 3e-4: a wrong kernel is off by far
// more (a missed term, a wrong index: errors of the order of the values).
// Adam divides by sqrt(v) + eps with v ~ g^2 tiny after three steps, which
// magnifies gradient differences: parameters get 1e-3. A kernel alone, on
// the same inputs, differs by its own summation order only (a dot product
// of 2048 terms: about sqrt(2048) * 6e-8 = 3e-6 of its scale; exp and log
// within a few ulp), so it gets a forward pass's 1e-4 with a margin that a
// first run on a new GPU should not exhaust; a wrong index or a missed term
// is off by the order of the values. The test prints the kernels closest
// to it. Each test prints
// the tensors that came closest to their tolerance, so that a change of
// the margin shows in the GPU check's log before it fails.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"
#include "KernelReplay.h"

#include "abi/ModelAbi.h"

#include "runtime/Decoding.h"
#include "runtime/Executable.h"
#include "runtime/Program.h"
#include "runtime/Session.h"
#include "runtime/TrainStep.h"
#include "runtime/Weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

using namespace loom;
using runtime::Tensor;

namespace {

std::string dataDir() {
  if (const char *dir = std::getenv("LOOM_DEVICE_DATA"); dir && *dir)
    return dir;
  return LOOM_DEVICE_DATA_DEFAULT;
}

/// A session of the executable at `path` on `device`; fails the test and
/// returns null when it cannot be made.
std::unique_ptr<runtime::Session>
sessionOf(const std::string &path, std::shared_ptr<runtime::Device> device) {
  auto program = runtime::Program::load(path);
  if (!program) {
    ADD_FAILURE() << path << ": " << program.error();
    return nullptr;
  }
  auto session = runtime::Session::create(*program, std::move(device));
  if (!session) {
    ADD_FAILURE() << path << ": " << session.error();
    return nullptr;
  }
  return std::move(*session);
}

/// Host copy of a tensor as doubles.
std::vector<double> valuesOf(const Tensor &tensor) {
  ErrorOr<Tensor> host = runtime::toHost(tensor);
  EXPECT_TRUE(bool(host)) << host.error();
  std::vector<double> out;
  if (!host)
    return out;
  EXPECT_EQ(host->dtype(), DType::F32);
  const float *data = host->f32();
  out.assign(data, data + host->numel());
  return out;
}

/// Elementwise agreement within `rtol` of the reference's RMS (and of each
/// element); NaN must meet NaN.
::testing::AssertionResult agree(const std::vector<double> &actual,
                                 const std::vector<double> &expected,
                                 double rtol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << actual.size() << " elements, expected " << expected.size();
  double sum = 0;
  for (double x : expected)
    sum += std::isfinite(x) ? x * x : 0;
  double rms = expected.empty() ? 0 : std::sqrt(sum / expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = actual[i], e = expected[i];
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a))
        return ::testing::AssertionFailure()
               << "element " << i << ": " << a << ", expected " << e;
      continue;
    }
    if (std::abs(a - e) > rtol * std::max(std::abs(e), rms) + 1e-30)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << ", expected " << e << " (rms "
             << rms << ")";
  }
  return ::testing::AssertionSuccess();
}

/// The largest |actual - expected| / max(|expected|, rms), over the
/// elements; what agree() holds under its tolerance. NaNs are agree()'s.
double worstError(const std::vector<double> &actual,
                  const std::vector<double> &expected) {
  if (actual.size() != expected.size())
    return INFINITY;
  double sum = 0;
  for (double x : expected)
    sum += std::isfinite(x) ? x * x : 0;
  double rms = expected.empty() ? 0 : std::sqrt(sum / expected.size());
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    if (std::isfinite(actual[i]) && std::isfinite(expected[i]))
      worst =
          std::max(worst, std::abs(actual[i] - expected[i]) /
                              (std::max(std::abs(expected[i]), rms) + 1e-30));
  return worst;
}

/// Prints the `count` tensors whose error came closest to `rtol`.
void printClosest(const std::map<std::string, double> &worst, double rtol,
                  size_t count = 4) {
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto &[name, error] : worst)
    ranked.push_back({error, name});
  std::sort(ranked.rbegin(), ranked.rend());
  for (size_t i = 0; i < ranked.size() && i < count; ++i)
    std::printf("  closest to tolerance: %-40s %.2e (%.0f%% of %.0e)\n",
                ranked[i].second.c_str(), ranked[i].first,
                100 * ranked[i].first / rtol, rtol);
}

/// The models with both executables in the data folder; `tiny` when there
/// are none, so that the suite shows (skipped) rather than not at all.
std::vector<std::string> modelsInData() {
  std::vector<std::string> models;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dataDir(), ec)) {
    std::string name = entry.path().filename().string();
    const std::string suffix = "-cpu.loomx";
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string model = name.substr(0, name.size() - suffix.size());
    if (std::filesystem::exists(dataDir() + "/" + model + "-cuda.loomx", ec))
      models.push_back(model);
  }
  std::sort(models.begin(), models.end());
  if (models.empty())
    models.push_back("tiny");
  return models;
}

class DeviceAgreement : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    std::string absent;
    gpu = test::openTestDevice(cpuOnly() ? "cpu" : "cuda", cpuOnly() ? 1 : 0,
                               absent);
    if (!gpu && !absent.empty())
      GTEST_SKIP() << absent;
    // openTestDevice has said why; the test body must not run.
    ASSERT_TRUE(gpu);
    cpu = test::openTestDevice("cpu", 0, absent);
    ASSERT_TRUE(cpu) << absent;
    std::string dir = dataDir();
    std::string model = dir + "/" + GetParam();
    onCpu = sessionOf(model + "-cpu.loomx", cpu);
    onGpu = sessionOf(model + (cpuOnly() ? "-cpu.loomx" : "-cuda.loomx"), gpu);
    ASSERT_TRUE(onCpu && onGpu);
    ASSERT_EQ(onCpu->parameterNames(), onGpu->parameterNames());
    setParameters(*onCpu);
    setParameters(*onGpu);
  }

  /// LOOM_AGREEMENT_DEVICE=cpu: the CPU executable against itself.
  static bool cpuOnly() {
    const char *kind = std::getenv("LOOM_AGREEMENT_DEVICE");
    return kind && std::string(kind) == "cpu";
  }

  /// The same parameters on every session: N(0, 0.1), drawn in name order.
  static void setParameters(runtime::Session &session) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    for (const std::string &name : session.parameterNames()) {
      const runtime::Program::StateTensor *state =
          session.program().stateTensor(name);
      Tensor host = test::hostTensor(DType::F32, state->shape);
      for (int64_t i = 0; i < host.numel(); ++i)
        host.f32()[i] = normal(rng);
      Status placed = session.setState(name, host.ref());
      ASSERT_TRUE(placed.ok()) << placed.message();
    }
  }

  /// Runs `entry` on host `inputs` (in inputNames order) on `session`;
  /// every output, by name, as doubles.
  static std::map<std::string, std::vector<double>>
  runOn(runtime::Session &session, const std::string &entry,
        const std::vector<const Tensor *> &inputs) {
    std::map<std::string, std::vector<double>> named;
    std::vector<Tensor> placed;
    std::vector<runtime::TensorRef> refs;
    for (const Tensor *t : inputs) {
      ErrorOr<Tensor> onDevice = runtime::toDevice(session.device(), t->ref());
      EXPECT_TRUE(bool(onDevice)) << onDevice.error();
      if (!onDevice)
        return named;
      refs.push_back(onDevice->ref());
      placed.push_back(std::move(*onDevice));
    }
    auto results = session.run(entry, refs);
    EXPECT_TRUE(bool(results))
        << session.device().name() << " @" << entry << ": " << results.error();
    if (results)
      for (const runtime::NamedTensor &output : *results)
        named[output.name] = valuesOf(output.tensor);
    return named;
  }

  /// A [rows, width] batch of ids in [4, 32), row b `lengths[b]` long.
  static Tensor batch(std::mt19937_64 &rng, std::vector<int> lengths,
                      int width) {
    std::uniform_int_distribution<int32_t> id(4, 31);
    std::vector<std::vector<int32_t>> rows;
    for (int length : lengths) {
      std::vector<int32_t> row(width, 0);
      for (int j = 0; j < length; ++j)
        row[j] = id(rng);
      rows.push_back(row);
    }
    return test::idsOf(rows);
  }

  std::shared_ptr<runtime::Device> cpu, gpu;
  std::unique_ptr<runtime::Session> onCpu, onGpu;
};

TEST_P(DeviceAgreement, ScoresAgree) {
  std::mt19937_64 rng(1);
  Tensor src = batch(rng, {5, 3, 4}, 5), tgt = batch(rng, {6, 4, 2}, 6);
  ASSERT_EQ(onCpu->inputNames("token_log_probs"),
            (std::vector<std::string>{"src", "tgt"}));
  auto expected = runOn(*onCpu, "token_log_probs", {&src, &tgt});
  auto actual = runOn(*onGpu, "token_log_probs", {&src, &tgt});
  ASSERT_FALSE(expected.empty());
  std::map<std::string, double> worst;
  for (const auto &[name, values] : expected) {
    EXPECT_TRUE(agree(actual[name], values, 1e-4)) << name;
    worst[name] = worstError(actual[name], values);
  }
  printClosest(worst, 1e-4);
}

TEST_P(DeviceAgreement, GradientsAgree) {
  std::mt19937_64 rng(4);
  Tensor src = batch(rng, {5, 3, 4}, 5), tgt = batch(rng, {6, 4, 2}, 6);
  // Dropout's seed: both devices draw the same masks from it.
  ErrorOr<Tensor> seed = runtime::scalarTensor(DType::I64, 5);
  ASSERT_TRUE(bool(seed)) << seed.error();
  ASSERT_EQ(onCpu->inputNames("loss_grad"),
            (std::vector<std::string>{"src", "tgt", "seed"}));
  auto expected = runOn(*onCpu, "loss_grad", {&src, &tgt, &*seed});
  auto actual = runOn(*onGpu, "loss_grad", {&src, &tgt, &*seed});
  ASSERT_GT(expected.size(), 1u) << "the loss and the gradients";
  const double lossTolerance = 1e-4, gradientTolerance = 3e-4;
  std::map<std::string, double> worst;
  for (const auto &[name, values] : expected) {
    bool isLoss = name == loom::abi::kLossOutput;
    double rtol = isLoss ? lossTolerance : gradientTolerance;
    EXPECT_TRUE(agree(actual[name], values, rtol)) << name;
    if (!isLoss)
      worst[name] = worstError(actual[name], values);
  }
  printClosest(worst, gradientTolerance);
}

TEST_P(DeviceAgreement, TrainingAgrees) {
  std::mt19937_64 rng(2);
  for (int64_t step = 1; step <= 3; ++step) {
    Tensor src = batch(rng, {5, 4, 3, 5}, 5), tgt = batch(rng, {6, 3, 5, 2}, 6);
    auto cpuLoss =
        runtime::runTrainStep(*onCpu, src.ref(), tgt.ref(), 11, step);
    auto gpuLoss =
        runtime::runTrainStep(*onGpu, src.ref(), tgt.ref(), 11, step);
    ASSERT_TRUE(bool(cpuLoss)) << cpuLoss.error();
    ASSERT_TRUE(bool(gpuLoss)) << gpuLoss.error();
    EXPECT_NEAR(*gpuLoss, *cpuLoss, 1e-4 * std::abs(*cpuLoss))
        << "step " << step;
  }
  std::map<std::string, double> worst;
  for (const std::string &name : onCpu->stateNames()) {
    auto expected = onCpu->getState(name);
    auto actual = onGpu->getState(name);
    ASSERT_TRUE(bool(expected) && bool(actual)) << name;
    std::vector<double> a = valuesOf(*actual), e = valuesOf(*expected);
    EXPECT_TRUE(agree(a, e, 1e-3)) << name;
    worst[name] = worstError(a, e);
  }
  printClosest(worst, 1e-3);
}

TEST_P(DeviceAgreement, DecodingAgrees) {
  std::mt19937_64 rng(3);
  Tensor src = batch(rng, {5, 2, 4}, 5);
  runtime::GreedyOptions options;
  options.maxLen = 12;
  auto expected = runtime::greedyDecode(*onCpu, src.ref(), options);
  auto actual = runtime::greedyDecode(*onGpu, src.ref(), options);
  ASSERT_TRUE(bool(expected)) << expected.error();
  ASSERT_TRUE(bool(actual)) << actual.error();
  EXPECT_EQ(*actual, *expected);
}

TEST_P(DeviceAgreement, EveryKernelAgreesAlone) {
  const double kernelTolerance = 1e-4;
  // The CPU executable that runs the CUDA one's steps (loom compile
  // --cuda-layouts): the CPU's own keeps the decoder's caches position
  // first, which the CUDA kernel does not read.
  std::string replayable = dataDir() + "/" + GetParam() + "-cpu-cuda-layouts.loomx";
  std::error_code ec;
  if (!cpuOnly()) {
    ASSERT_TRUE(std::filesystem::exists(replayable, ec))
        << replayable << ": compile it with loom compile --cuda-layouts";
    onCpu = sessionOf(replayable, cpu);
    ASSERT_TRUE(onCpu);
    setParameters(*onCpu);
  }
  test::KernelReplay replay(*onCpu, *onGpu, kernelTolerance);
  // attention_grad's dq and dk come from dS = P (dP - rowsum(dO O)): where
  // attention is near uniform (random weights), dP's entries nearly equal
  // their mean and the difference keeps few of fp32's bits, so two orders
  // of summation part by ~1e-4 of its RMS (3.7e-4 seen for `tiny` on an
  // H200); a wrong kernel is off by the order of the values.
  replay.setTolerance("attention_grad", 6, 1e-3);
  replay.setTolerance("attention_grad", 7, 1e-3);
  onCpu->setStepHook(&replay);
  std::mt19937_64 rng(5);
  Tensor src = batch(rng, {5, 4, 3, 5}, 5), tgt = batch(rng, {6, 3, 5, 2}, 6);
  auto loss = runtime::runTrainStep(*onCpu, src.ref(), tgt.ref(), 11, 1);
  ASSERT_TRUE(bool(loss)) << loss.error();
  ErrorOr<Tensor> seed = runtime::scalarTensor(DType::I64, 5);
  ASSERT_TRUE(bool(seed)) << seed.error();
  for (const char *entry : {"loss", "loss_grad", "token_log_probs"})
    if (onCpu->hasEntry(entry)) {
      std::vector<const Tensor *> inputs;
      for (const std::string &name : onCpu->inputNames(entry))
        inputs.push_back(name == "src" ? &src : name == "tgt" ? &tgt : &*seed);
      EXPECT_FALSE(runOn(*onCpu, entry, inputs).empty()) << entry;
    }
  // Greedy search steps through @decode_step_logits, beam search through
  // @decode_step.
  runtime::GreedyOptions options;
  options.maxLen = 12;
  auto decoded = runtime::greedyDecode(*onCpu, src.ref(), options);
  ASSERT_TRUE(bool(decoded)) << decoded.error();
  runtime::BeamOptions beam;
  beam.beam = 2;
  beam.maxLen = 12;
  auto searched = runtime::beamSearch(*onCpu, src.ref(), beam);
  ASSERT_TRUE(bool(searched)) << searched.error();
  // @decode_step_align, where a search returns alignments.
  beam.alignments = true;
  auto aligned = runtime::beamSearch(*onCpu, src.ref(), beam);
  ASSERT_TRUE(bool(aligned)) << aligned.error();
  // On the CPU both read @decode_step_logits; @decode_step's log-softmax
  // runs in one step of its own, from empty self-attention caches.
  auto encoded = onCpu->run("encode", {src.ref()});
  ASSERT_TRUE(bool(encoded)) << encoded.error();
  std::map<std::string, Tensor> stepState;
  int64_t sentences = src.shape()[0];
  for (runtime::NamedTensor &t : *encoded) {
    const std::vector<int64_t> &shape = t.tensor.shape();
    stepState["self_" + t.name.substr(std::string("cross_").size())] =
        test::hostTensor(DType::F32, {0, sentences, 1, shape[1], shape[3]});
    stepState[t.name] = std::move(t.tensor);
  }
  Tensor tokens = test::hostTensor(DType::I32, {sentences, 1});
  for (int64_t b = 0; b < sentences; ++b)
    static_cast<int32_t *>(tokens.data())[b] = loom::abi::kBosId;
  ErrorOr<Tensor> position = runtime::scalarTensor(DType::I64, 0);
  ASSERT_TRUE(bool(position)) << position.error();
  Tensor start = test::hostTensor(DType::I64, {sentences});
  std::vector<runtime::TensorRef> stepInputs;
  for (const std::string &name : onCpu->inputNames("decode_step"))
    stepInputs.push_back(name == "src"        ? src.ref()
                         : name == "tokens"   ? tokens.ref()
                         : name == "position" ? position->ref()
                         : name == "start"    ? start.ref()
                                              : stepState.at(name).ref());
  auto stepped = onCpu->run("decode_step", stepInputs);
  ASSERT_TRUE(bool(stepped)) << stepped.error();
  onCpu->setStepHook(nullptr);

  std::map<std::string, double> worst;
  int64_t replays = 0;
  for (const auto &[symbol, verdict] : replay.verdicts()) {
    EXPECT_TRUE(verdict.failure.empty()) << symbol << " (" << verdict.replays
                                         << " replays): " << verdict.failure;
    worst[symbol] = verdict.worst;
    replays += verdict.replays;
  }
  std::printf("  %zu kernels, %lld steps replayed on %s\n",
              replay.verdicts().size(), (long long)replays,
              onGpu->device().description().c_str());
  printClosest(worst, kernelTolerance, 6);
  std::vector<std::string> missed = replay.kernelsNotReplayed();
  std::string list;
  for (const std::string &kernel : missed)
    list += " " + kernel;
  EXPECT_TRUE(missed.empty()) << "no step replayed" << list;
}

// The replay itself: against a copy of the tiny model whose first step
// with a float attribute (an attention's score scale) has it changed, it
// must name that kernel at that step, and no other kernel.
TEST(KernelReplay, NamesTheKernelThatDiffers) {
  std::string path = dataDir() + "/tiny-cpu.loomx";
  ErrorOr<Executable> exe = loadExecutable(path);
  ASSERT_TRUE(bool(exe)) << exe.error();
  Executable changed = *exe;
  int stepIndex = -1;
  std::string symbol;
  for (runtime::EntryPoint &entry : *changed.mutable_entry_points()) {
    if (entry.name() != loom::abi::kTrainStep)
      continue;
    for (int s = 0; s < entry.steps_size() && stepIndex < 0; ++s)
      if (entry.steps(s).float_attrs_size() > 0) {
        runtime::Step *step = entry.mutable_steps(s);
        step->set_float_attrs(0, step->float_attrs(0) * 1.25f);
        stepIndex = s;
        symbol = changed.kernels(step->kernel()).symbol();
      }
  }
  ASSERT_GE(stepIndex, 0) << "no step of @train_step has a float attribute";
  std::unique_ptr<runtime::Session> reference =
      test::cpuSession(std::move(*exe), 1);
  std::unique_ptr<runtime::Session> target =
      test::cpuSession(std::move(changed), 1);
  ASSERT_TRUE(reference && target);
  // Drawn parameters: with zeros every score is 0, whatever its scale.
  Status drawn = runtime::initParameters(*reference, 3);
  ASSERT_TRUE(drawn.ok()) << drawn.message();
  ASSERT_TRUE(test::copyState(*reference, *target));

  test::KernelReplay replay(*reference, *target, 1e-4);
  reference->setStepHook(&replay);
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int32_t> id(4, 31);
  std::vector<std::vector<int32_t>> rows(3, std::vector<int32_t>(5));
  for (auto &row : rows)
    for (int32_t &x : row)
      x = id(rng);
  Tensor src = test::idsOf(rows), tgt = test::idsOf(rows);
  auto loss = runtime::runTrainStep(*reference, src.ref(), tgt.ref(), 11, 1);
  ASSERT_TRUE(bool(loss)) << loss.error();
  reference->setStepHook(nullptr);
  for (const auto &[kernel, verdict] : replay.verdicts())
    if (kernel == symbol)
      EXPECT_NE(verdict.failure.find("'train_step' step " +
                                     std::to_string(stepIndex) + ":"),
                std::string::npos)
          << kernel << ": " << verdict.failure;
    else
      EXPECT_EQ(verdict.failure, "") << kernel;
}

INSTANTIATE_TEST_SUITE_P(Models, DeviceAgreement,
                         ::testing::ValuesIn(modelsInData()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace
