//===- Observers.cpp - What a training run tells its user -----------------===//

#include "api/train/Observers.h"

#include "runtime/AtomicFile.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace loom::train {

namespace {

/// A number as JSON has it (no nan or inf).
std::string json(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string integer(int64_t value) { return std::to_string(value); }

/// "H:MM:SS".
std::string clockString(double seconds) {
  auto s = static_cast<long long>(std::max(0.0, seconds));
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600,
                (s / 60) % 60, s % 60);
  return text;
}

} // namespace

void ConsoleObserver::onStep(const StepReport &r) {
  // A job's ranks: what rank 0 waited for the others, and the ranks.
  char ranks[64] = "";
  if (r.ranks > 1)
    std::snprintf(ranks, sizeof ranks, "  %d ranks, %.0f%% waiting", r.ranks,
                  100 * r.waitShare);
  if (bar) {
    auto now = std::chrono::steady_clock::now();
    if (!r.logged && now - lastDraw <= std::chrono::milliseconds(200))
      return;
    lastDraw = now;
    const int width = 24;
    int filled = r.totalSteps > 0
                     ? int(width * r.step / std::max<int64_t>(1, r.totalSteps))
                     : 0;
    std::string drawn(std::min(filled, width), '#');
    drawn.resize(width, '.');
    std::printf("\r\033[K[%s] step %lld/%lld  epoch %lld  loss %.4f  %.0f "
                "tok/s  lr %.2e%s  ETA %s",
                drawn.c_str(), (long long)r.step, (long long)r.totalSteps,
                (long long)r.epoch, r.loss, r.tokensPerSecond, r.learningRate,
                ranks, clockString(r.etaSeconds).c_str());
    if (r.logged)
      std::printf("\n");
    std::fflush(stdout);
  } else if (r.logged) {
    std::printf("step %lld/%lld  epoch %lld  loss %.4f  %.0f tok/s  lr %.2e%s  "
                "elapsed %s  ETA %s\n",
                (long long)r.step, (long long)r.totalSteps, (long long)r.epoch,
                r.loss, r.tokensPerSecond, r.learningRate, ranks,
                clockString(r.elapsedSeconds).c_str(),
                clockString(r.etaSeconds).c_str());
    std::fflush(stdout);
  }
}

void ConsoleObserver::onValidation(const ValidationReport &r) {
  std::printf("validation at step %lld (epoch %lld): loss %.4f (ppl %.2f), "
              "greedy BLEU %.2f%s  [%.1fs]\n",
              (long long)r.step, (long long)r.epoch, r.nll, std::exp(r.nll),
              r.bleu, r.best ? " (best)" : "", r.seconds);
  std::fflush(stdout);
}

void ConsoleObserver::onEnd(const TrainEnd &end) {
  const TrainPosition &at = end.position;
  if (end.signal != 0) {
    std::printf("\nstopped by signal %d at step %lld; saved %s; continue "
                "with --resume\n",
                end.signal, (long long)at.step, end.saved.c_str());
  } else {
    std::printf("done: %lld steps (through epoch %lld) in %s\n",
                (long long)at.step, (long long)at.lastEpoch(),
                clockString(at.seconds).c_str());
    if (at.bestStep > 0)
      std::printf("best greedy BLEU %.2f at step %lld\n", at.bestBleu,
                  (long long)at.bestStep);
    if (!end.saved.empty())
      std::printf("parameters: %s; average the last checkpoints with `loom "
                  "average %s`\n",
                  end.saved.c_str(), dir.c_str());
  }
  std::fflush(stdout);
}

void MetricsObserver::append(const std::string &line) {
  std::ofstream out(dir + "/" + kMetricsFile, std::ios::app);
  out << line << "\n";
}

std::string metricsRecord(const StepReport &r) {
  return "{\"type\": \"train\", \"step\": " + integer(r.step) +
         ", \"epoch\": " + integer(r.epoch) + ", \"loss\": " + json(r.loss) +
         ", \"lr\": " + json(r.learningRate) +
         ", \"tokens_per_s\": " + json(r.tokensPerSecond) +
         ", \"tokens\": " + integer(r.tokens) +
         ", \"elapsed_s\": " + json(r.elapsedSeconds) +
         ", \"ranks\": " + integer(r.ranks) +
         ", \"wait_share\": " + json(r.waitShare) + "}";
}

std::string metricsRecord(const ValidationReport &r) {
  return "{\"type\": \"valid\", \"step\": " + integer(r.step) +
         ", \"epoch\": " + integer(r.epoch) +
         ", \"valid_nll\": " + json(r.nll) +
         ", \"valid_ppl\": " + json(std::exp(r.nll)) +
         ", \"valid_bleu\": " + json(r.bleu) +
         ", \"valid_s\": " + json(r.seconds) +
         ", \"elapsed_s\": " + json(r.elapsedSeconds) + "}";
}

void MetricsObserver::onStep(const StepReport &r) {
  if (r.logged)
    append(metricsRecord(r));
}

void MetricsObserver::onValidation(const ValidationReport &r) {
  append(metricsRecord(r));
}

Status truncateMetrics(const std::string &dir, int64_t step) {
  std::string path = dir + "/" + kMetricsFile;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::success(); // a run that never reported
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    // Every record starts {"type": ..., "step": N, ...}; a line without a
    // readable step (torn by a crash mid-write) is dropped too.
    size_t at = line.find("\"step\": ");
    long long recorded = -1;
    if (at != std::string::npos)
      recorded = std::strtoll(line.c_str() + at + 8, nullptr, 10);
    if (at == std::string::npos || recorded > step || recorded < 0) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!dropped)
    return Status::success();
  return writeFileAtomically(path, {BytePiece{kept.data(), kept.size()}});
}

} // namespace loom::train
