//===- ModelBench.cpp - Timing a compiled model ---------------------------===//

#include "api/bench/ModelBench.h"

#include "runtime/Decoding.h"
#include "runtime/TrainStep.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/Gemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <sys/resource.h>

namespace loom::bench {

namespace {

/// Bounds far above any useful measurement.
constexpr int64_t kMaxBenchBatch = 1 << 16;
constexpr int64_t kMaxBenchSteps = 1000000;

ErrorOr<runtime::Tensor> randomIds(std::mt19937_64 &rng, int64_t rows,
                                   int64_t len, int64_t vocab) {
  std::uniform_int_distribution<int32_t> id(4, static_cast<int32_t>(vocab - 1));
  ErrorOr<runtime::Tensor> ids = runtime::Tensor::host(DType::I32, {rows, len});
  if (!ids)
    return ids;
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

using StepFn = std::function<Status(int)>;

ErrorOr<StepFn> trainStep(runtime::Session &model,
                          const TransformerConfig &config,
                          const ModelBenchOptions &o, std::mt19937_64 &rng) {
  ErrorOr<runtime::Tensor> srcIds =
      randomIds(rng, o.batch, o.srcLen, config.src_vocab());
  if (!srcIds)
    return srcIds.status();
  ErrorOr<runtime::Tensor> tgtIds =
      randomIds(rng, o.batch, o.tgtLen, config.tgt_vocab());
  if (!tgtIds)
    return tgtIds.status();
  auto src = std::make_shared<runtime::Tensor>(std::move(*srcIds));
  auto tgt = std::make_shared<runtime::Tensor>(std::move(*tgtIds));
  return StepFn([&model, src, tgt](int step) -> Status {
    ErrorOr<double> loss =
        runtime::runTrainStep(model, src->ref(), tgt->ref(), step, step + 1);
    if (!loss)
      return loss.status();
    if (!std::isfinite(*loss))
      return Status::failure("the loss is not finite at step " +
                                 std::to_string(step + 1),
                             ErrorCode::Internal);
    return Status::success();
  });
}

/// Decoding of the whole batch for exactly T tokens.
ErrorOr<StepFn> decodeStep(runtime::Session &model,
                           const TransformerConfig &config,
                           const ModelBenchOptions &o, std::mt19937_64 &rng) {
  ErrorOr<runtime::Tensor> srcIds =
      randomIds(rng, o.batch, o.srcLen, config.src_vocab());
  if (!srcIds)
    return srcIds.status();
  auto src = std::make_shared<runtime::Tensor>(std::move(*srcIds));
  if (o.beam > 1) {
    runtime::BeamOptions beam;
    beam.beam = o.beam;
    beam.maxLen = beam.minLen = o.tgtLen;
    return StepFn([&model, src, beam](int) -> Status {
      return runtime::beamSearch(model, src->ref(), beam).status();
    });
  }
  runtime::GreedyOptions greedy;
  greedy.maxLen = o.tgtLen;
  greedy.stopAtEos = false;
  return StepFn([&model, src, greedy](int) -> Status {
    return runtime::greedyDecode(model, src->ref(), greedy).status();
  });
}

} // namespace

Status checkModelBench(const ModelBenchOptions &o,
                       const TransformerConfig &config) {
  auto invalid = [](const std::string &why) {
    return Status::failure(why, ErrorCode::InvalidArgument);
  };
  if (o.mode != "train" && o.mode != "decode")
    return invalid("bench takes 'train' or 'decode', not '" + o.mode + "'");
  if (o.batch <= 0 || o.srcLen <= 0 || o.tgtLen <= 1 || o.steps <= 0 ||
      o.warmup < 0 || o.beam < 1)
    return invalid("--batch, --src-len, --steps and --beam must be positive, "
                   "--tgt-len at least 2 and --warmup not negative");
  if (o.beam > 1 && o.mode != "decode")
    return invalid("--beam is for 'decode'");
  // The model takes sequences of at most max_len; longer ones would time
  // a model nobody can run (and a decode of 10^5 steps never ends).
  if (o.srcLen > config.max_len() || o.tgtLen + 1 > config.max_len())
    return invalid("--src-len " + std::to_string(o.srcLen) + " and --tgt-len " +
                   std::to_string(o.tgtLen) + " must fit the model's max_len " +
                   std::to_string(config.max_len()) +
                   " (--tgt-len + 1 with bos)");
  if (o.batch * o.beam > kMaxBenchBatch || o.steps > kMaxBenchSteps ||
      o.warmup > kMaxBenchSteps)
    return invalid("--batch times --beam must be at most " +
                   std::to_string(kMaxBenchBatch) +
                   ", --steps and --warmup at most " +
                   std::to_string(kMaxBenchSteps));
  return Status::success();
}

int64_t benchRows(const ModelBenchOptions &o) {
  // Beam search runs @decode_step on every hypothesis of every sentence.
  return o.batch * o.beam;
}

int64_t benchLen(const ModelBenchOptions &o) {
  return std::max(o.srcLen, o.tgtLen + 1);
}

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

ErrorOr<nlohmann::json> runModelBench(runtime::Session &model,
                                      const TransformerConfig &config,
                                      const ModelBenchOptions &o) {
  LOOM_RETURN_IF_ERROR(checkModelBench(o, config));
  std::mt19937_64 rng(7);
  ErrorOr<StepFn> step = o.mode == "train" ? trainStep(model, config, o, rng)
                                           : decodeStep(model, config, o, rng);
  if (!step)
    return step.status();
  for (int i = 0; i < o.warmup; ++i)
    LOOM_RETURN_IF_ERROR((*step)(i));
  model.setProfiling(o.profile);
  std::vector<double> ms;
  for (int i = 0; i < o.steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    LOOM_RETURN_IF_ERROR((*step)(o.warmup + i));
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }

  double flops = o.mode == "train"
                     ? 3 * forwardFlops(config, o.batch, o.srcLen, o.tgtLen)
                     : decodeFlops(config, o.batch, o.srcLen, o.tgtLen, o.beam);
  double tokens = o.mode == "train" ? double(o.batch * (o.srcLen + o.tgtLen))
                                    : double(o.batch * o.tgtLen);
  double median = percentile(ms, 0.5);
  bool onCpu = model.device().target() == runtime::Executable::CPU;
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
  line["device"] = model.device().description();
  line["threads"] =
      onCpu ? static_cast<cpu::CpuDevice &>(model.device()).threads() : 0;
  line["blas"] = onCpu ? cpu::blasName() : "cuBLASLt";
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
  if (o.profile) {
    double total = 0;
    for (const runtime::KernelProfile &p : model.profile())
      total += p.seconds;
    std::fprintf(stderr, "%-28s %8s %10s %6s\n", "kernel", "calls", "ms/step",
                 "share");
    for (const runtime::KernelProfile &p : model.profile())
      std::fprintf(stderr, "%-28s %8lld %10.2f %5.1f%%\n", p.kernel.c_str(),
                   static_cast<long long>(p.calls / o.steps),
                   p.seconds * 1000 / o.steps, 100 * p.seconds / total);
  }
  return line;
}

} // namespace loom::bench
