//===- Bench.cpp - `loom bench train|decode` ------------------------------===//
//
// Times the compiled CPU model on random batches and prints one JSON line:
//
//   train:  a step is one @train_step (forward, backward, Adam) on B pairs of
//           S source and T target tokens; tokens per step = B * (S + T).
//   decode: a step is decoding B sources of S tokens for exactly T tokens
//           (@encode once, then T @decode_step calls with the cache, no
//           early stop), greedy or with --beam N (N hypotheses a sentence,
//           eos refused before T); tokens per step = B * T whatever N.
//
// Model FLOPs count 2*M*N*K for every GEMM of the model's forward (the
// projections, the FFN, the generator over every target position, and the
// two attention products per attention); a training step is three forwards'
// worth. bench/pytorch_bench.py uses the same definitions.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/CpuBackend.h"

#include "runtime/Decoding.h"
#include "runtime/cpu/Gemm.h"

#include "llvm/Support/FormatVariadic.h"

#include "nlohmann/json.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sys/resource.h>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct BenchOptions {
  std::string mode;
  ModelOptions model;
  int64_t batch = 32, srcLen = 30, tgtLen = 30;
  int64_t beam = 1;
  std::string precision = "fp32";
  int steps = 10, warmup = 2, threads = 0;
  std::string device = "cpu";
  bool profile = false;
};

/// FLOPs of one forward over B x S sources and B x T targets.
double forwardFlops(const TransformerConfig &c, double b, double s, double t) {
  double d = c.d_model(), ff = c.d_ff();
  double encoderLayer =
      2 * b * s * (4 * d * d + 2 * d * ff) + 4 * b * s * s * d;
  double decoderLayer = 2 * b * t * (4 * d * d + 2 * d * ff) +
                        4 * b * t * t * d + 2 * b * t * 2 * d * d +
                        2 * b * s * 2 * d * d + 4 * b * t * s * d;
  return c.encoder_layers() * encoderLayer + c.decoder_layers() * decoderLayer +
         2 * b * t * d * c.tgt_vocab();
}

/// FLOPs of decoding: the encoder and the cross K/V once per sentence, then
/// per step one position for each of `beam` hypotheses a sentence,
/// attending over the positions so far.
double decodeFlops(const TransformerConfig &c, double b, double s, double t,
                   double beam) {
  double d = c.d_model(), ff = c.d_ff();
  double flops = c.encoder_layers() *
                 (2 * b * s * (4 * d * d + 2 * d * ff) + 4 * b * s * s * d);
  flops += c.decoder_layers() * 2 * b * s * 2 * d * d;
  double rows = b * beam;
  for (double step = 1; step <= t; ++step)
    flops += c.decoder_layers() *
                 (2 * rows * (4 * d * d + 2 * d * ff) + 4 * rows * step * d +
                  2 * rows * 2 * d * d + 4 * rows * s * d) +
             2 * rows * d * c.tgt_vocab();
  return flops;
}

llvm::Expected<runtime::Tensor> randomIds(std::mt19937_64 &rng, int64_t rows,
                                          int64_t len, int64_t vocab) {
  std::uniform_int_distribution<int32_t> id(4, static_cast<int32_t>(vocab - 1));
  auto ids = toExpected(runtime::Tensor::host(DType::I32, {rows, len}));
  if (!ids)
    return ids.takeError();
  auto *out = static_cast<int32_t *>(ids->data());
  for (int64_t i = 0; i < rows * len; ++i)
    out[i] = id(rng);
  return ids;
}

double percentile(std::vector<double> sorted, double p) {
  std::sort(sorted.begin(), sorted.end());
  double index = p * double(sorted.size() - 1);
  size_t lo = static_cast<size_t>(index);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (index - double(lo)) * (sorted[hi] - sorted[lo]);
}

using StepFn = std::function<llvm::Error(int)>;

llvm::Expected<StepFn> trainStep(runtime::Session &model,
                                 const TransformerConfig &config,
                                 const BenchOptions &o, std::mt19937_64 &rng) {
  auto srcIds = randomIds(rng, o.batch, o.srcLen, config.src_vocab());
  if (!srcIds)
    return srcIds.takeError();
  auto tgtIds = randomIds(rng, o.batch, o.tgtLen, config.tgt_vocab());
  if (!tgtIds)
    return tgtIds.takeError();
  auto src = std::make_shared<runtime::Tensor>(std::move(*srcIds));
  auto tgt = std::make_shared<runtime::Tensor>(std::move(*tgtIds));
  return StepFn([&model, src, tgt](int step) -> llvm::Error {
    auto loss = runTrainStep(model, *src, *tgt, step, step + 1);
    if (!loss)
      return loss.takeError();
    if (!std::isfinite(*loss))
      return error("the loss is not finite at step " + llvm::Twine(step + 1));
    return llvm::Error::success();
  });
}

/// Decoding of the whole batch for exactly T tokens.
llvm::Expected<StepFn> decodeStep(runtime::Session &model,
                                  const TransformerConfig &config,
                                  const BenchOptions &o, std::mt19937_64 &rng) {
  auto srcIds = randomIds(rng, o.batch, o.srcLen, config.src_vocab());
  if (!srcIds)
    return srcIds.takeError();
  auto src = std::make_shared<runtime::Tensor>(std::move(*srcIds));
  if (o.beam > 1) {
    runtime::BeamOptions beam;
    beam.beam = o.beam;
    beam.maxLen = beam.minLen = o.tgtLen;
    return StepFn([&model, src, beam](int) -> llvm::Error {
      auto out = runtime::beamSearch(model, src->ref(), beam);
      if (!out)
        return error(out.error());
      return llvm::Error::success();
    });
  }
  runtime::GreedyOptions greedy;
  greedy.maxLen = o.tgtLen;
  greedy.stopAtEos = false;
  return StepFn([&model, src, greedy](int) -> llvm::Error {
    auto out = runtime::greedyDecode(model, src->ref(), greedy);
    if (!out)
      return error(out.error());
    return llvm::Error::success();
  });
}

/// Bounds far above any useful measurement, so that a typo is refused
/// instead of running for days.
constexpr int64_t kMaxBenchBatch = 1 << 16;
constexpr int64_t kMaxBenchSteps = 1000000;

llvm::Error bench(const BenchOptions &o) {
  if (o.mode != "train" && o.mode != "decode")
    return error("bench takes 'train' or 'decode', not '" + o.mode + "'");
  if (o.batch <= 0 || o.srcLen <= 0 || o.tgtLen <= 1 || o.steps <= 0 ||
      o.warmup < 0 || o.beam < 1)
    return error("--batch, --src-len, --steps and --beam must be positive, "
                 "--tgt-len at least 2 and --warmup not negative");
  if (o.beam > 1 && o.mode != "decode")
    return error("--beam is for 'decode'");
  auto config = o.model.load();
  if (!config)
    return config.takeError();
  // The model takes sequences of at most max_len; longer ones would time
  // a model nobody can run (and a decode of 10^5 steps never ends).
  if (o.srcLen > config->max_len() || o.tgtLen + 1 > config->max_len())
    return error(llvm::formatv("--src-len {0} and --tgt-len {1} must fit the "
                               "model's max_len {2} (--tgt-len + 1 with bos)",
                               o.srcLen, o.tgtLen, config->max_len()));
  if (o.batch * o.beam > kMaxBenchBatch || o.steps > kMaxBenchSteps ||
      o.warmup > kMaxBenchSteps)
    return error(llvm::formatv("--batch times --beam must be at most {0}, "
                               "--steps and --warmup at most {1}",
                               kMaxBenchBatch, kMaxBenchSteps));
  int64_t len = std::max(o.srcLen, o.tgtLen + 1);
  // Beam search runs @decode_step on every hypothesis of every sentence.
  int64_t rows = o.batch * o.beam;
  auto device = openCommandDevice(o.device, o.threads);
  if (!device)
    return device.takeError();
  if (o.precision != "fp32" && o.mode != "decode")
    return error("--precision is for 'decode'");
  CodeTarget target = codeTargetOf(**device);
  target.precision = o.precision;
  auto compileStart = std::chrono::steady_clock::now();
  auto exe = compileExecutable(
      *config, pipelineFor(*config, rows * len, len, rows), target);
  if (!exe)
    return exe.takeError();
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();
  auto model = loadSession(std::move(*exe), *device);
  if (!model)
    return model.takeError();
  if (llvm::Error err = initParameters(**model, /*seed=*/1))
    return err;

  std::mt19937_64 rng(7);
  auto step = o.mode == "train" ? trainStep(**model, *config, o, rng)
                                : decodeStep(**model, *config, o, rng);
  if (!step)
    return step.takeError();
  for (int i = 0; i < o.warmup; ++i)
    if (llvm::Error err = (*step)(i))
      return err;
  (*model)->setProfiling(o.profile);
  std::vector<double> ms;
  for (int i = 0; i < o.steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error err = (*step)(o.warmup + i))
      return err;
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }

  double flops =
      o.mode == "train"
          ? 3 * forwardFlops(*config, o.batch, o.srcLen, o.tgtLen)
          : decodeFlops(*config, o.batch, o.srcLen, o.tgtLen, o.beam);
  double tokens = o.mode == "train" ? double(o.batch * (o.srcLen + o.tgtLen))
                                    : double(o.batch * o.tgtLen);
  double median = percentile(ms, 0.5);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  nlohmann::json line;
  line["system"] = "loom";
  line["mode"] = o.mode;
  line["batch"] = o.batch;
  line["src_len"] = o.srcLen;
  line["tgt_len"] = o.tgtLen;
  line["beam"] = o.beam;
  line["precision"] = o.precision;
  line["device"] = (*model)->device().description();
  line["threads"] = cpuThreads(**model);
  line["blas"] = cpu::blasName();
  line["steps"] = o.steps;
  line["tokens_per_step"] = tokens;
  line["tokens_per_s"] = tokens / (median / 1000);
  line["step_ms_median"] = median;
  line["step_ms_min"] = percentile(ms, 0);
  line["step_ms_p10"] = percentile(ms, 0.1);
  line["step_ms_p90"] = percentile(ms, 0.9);
  line["step_ms_max"] = percentile(ms, 1);
  line["model_gflops_per_step"] = flops / 1e9;
  line["model_gflops_per_s"] = flops / 1e9 / (median / 1000);
  line["peak_rss_bytes"] = int64_t(usage.ru_maxrss) * 1024;
  line["compile_s"] = compileSeconds;
  std::printf("%s\n", line.dump().c_str());
  if (o.profile) {
    double total = 0;
    for (const runtime::KernelProfile &p : (*model)->profile())
      total += p.seconds;
    std::fprintf(stderr, "%-28s %8s %10s %6s\n", "kernel", "calls", "ms/step",
                 "share");
    for (const runtime::KernelProfile &p : (*model)->profile())
      std::fprintf(stderr, "%-28s %8lld %10.2f %5.1f%%\n", p.kernel.c_str(),
                   static_cast<long long>(p.calls / o.steps),
                   p.seconds * 1000 / o.steps, 100 * p.seconds / total);
  }
  return llvm::Error::success();
}

} // namespace

void addBenchCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App *cmd = app.add_subcommand(
      "bench",
      "Time the compiled model: train steps, or greedy or beam decoding");
  cmd->add_option("mode", o->mode, "train or decode")->required();
  o->model.addTo(cmd);
  cmd->add_option("--batch", o->batch, "Sentence pairs per step")
      ->capture_default_str();
  cmd->add_option("--src-len", o->srcLen, "Source tokens per sentence")
      ->capture_default_str();
  cmd->add_option("--tgt-len", o->tgtLen,
                  "Target tokens per sentence (decode: tokens generated)")
      ->capture_default_str();
  cmd->add_option("--beam", o->beam,
                  "decode: hypotheses per sentence (1: greedy)")
      ->capture_default_str();
  addPrecisionOption(cmd, o->precision);
  cmd->add_option("--steps", o->steps, "Timed steps")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed steps first")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--device", o->device,
                  "Where the model runs: cpu, or cuda (cuda:N for GPU N)")
      ->capture_default_str();
  cmd->add_flag("--profile", o->profile, "Print the time per kernel to stderr");
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = bench(*o))
      exitCode = fail("bench", std::move(err));
  });
}

} // namespace loom::cli
