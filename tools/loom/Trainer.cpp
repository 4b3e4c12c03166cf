//===- Trainer.cpp - The training loop of `loom train` --------------------===//

#include "tools/loom/Trainer.h"
#include "tools/loom/Common.h"
#include "tools/loom/CpuBackend.h"
#include "tools/loom/Plot.h"

#include "runtime/AtomicFile.h"
#include "text/Batching.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace loom::cli {

namespace {

using Clock = std::chrono::steady_clock;

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Set by SIGINT or SIGTERM; the loop saves a checkpoint at the next step
/// boundary and stops.
std::atomic<int> stopSignal{0};

extern "C" void onStopSignal(int signal) { stopSignal = signal; }

/// The dropout seed of one step: the run's seed and the step, mixed
/// (splitmix64), so that steps draw unrelated masks and a resumed run draws
/// the same ones.
int64_t stepSeed(uint64_t seed, int64_t step) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}

std::string clockString(double seconds) {
  auto s = static_cast<int64_t>(std::max(0.0, seconds));
  return llvm::formatv("{0}:{1:2}:{2:2}", s / 3600, (s / 60) % 60, s % 60);
}

int64_t metadataInt(const Metadata &m, const std::string &key, bool &ok) {
  auto it = m.find(key);
  int64_t value = 0;
  if (it == m.end() || llvm::StringRef(it->second).getAsInteger(10, value))
    ok = false;
  return value;
}

double metadataDouble(const Metadata &m, const std::string &key, bool &ok) {
  auto it = m.find(key);
  double value = 0;
  if (it == m.end() || llvm::StringRef(it->second).getAsDouble(value))
    ok = false;
  return value;
}

/// A number as JSON has it (no nan or inf).
std::string json(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

class Trainer {
public:
  Trainer(runtime::Session &model, const TrainSettings &settings,
          TrainPosition position, const TrainData &train,
          const ValidationSet *valid, const text::Tokenizer &tokenizer,
          const Metadata &runMetadata)
      : model(model), s(settings), at(position), train(train), valid(valid),
        tokenizer(tokenizer), runMetadata(runMetadata),
        curves(settings.dir, settings.plotCurves && valid && leader()) {
    for (size_t i = 0; i < train.sources.size(); ++i)
      lengths.push_back(
          {int64_t(train.sources[i].size()), int64_t(train.targets[i].size())});
  }

  int run();

private:
  bool leader() const { return !s.job || s.job->rank() == 0; }
  bool finished() const {
    return (s.steps > 0 && at.step >= s.steps) ||
           (s.epochs > 0 && at.epoch > s.epochs);
  }
  /// Runs one batch; `tokens` counts its real source and target tokens,
  /// `targets` the target tokens the loss averages over.
  llvm::Expected<double> step(const text::Batch &batch, int64_t &tokens,
                              int64_t &targets);
  void report(bool force);
  llvm::Error checkpoint(bool validate);
  void writeMetrics(const std::string &line);
  /// The run's metadata and where training stands now.
  Metadata savedMetadata() const {
    Metadata metadata = runMetadata;
    TrainPosition now = at;
    now.seconds = elapsed();
    now.save(metadata);
    return metadata;
  }
  double elapsed() const {
    return at.seconds +
           std::chrono::duration<double>(Clock::now() - started).count();
  }

  runtime::Session &model;
  const TrainSettings &s;
  TrainPosition at;
  const TrainData &train;
  const ValidationSet *valid;
  const text::Tokenizer &tokenizer;
  const Metadata &runMetadata;
  std::vector<text::PairLengths> lengths;
  CurvePlotter curves;

  Clock::time_point started = Clock::now();
  int64_t batchesThisEpoch = 0;
  // Since the last report: loss summed over target tokens, tokens, time.
  double windowLoss = 0;
  int64_t windowTargets = 0, windowTokens = 0, windowSteps = 0;
  Clock::time_point windowStart = Clock::now();
  Clock::time_point lastDraw;
  double lastLoss = NAN, lastRate = 0, lastWait = 0;
  // The job's wait time when the window began.
  double windowWaitStart = 0;
  // Step time of this process, for the ETA.
  double stepSeconds = 0;
  int64_t stepsRun = 0;
};

llvm::Expected<double> Trainer::step(const text::Batch &batch, int64_t &tokens,
                                     int64_t &targets) {
  // The global batch's tokens, which every rank knows.
  tokens = targets = 0;
  for (int64_t index : batch) {
    targets += int64_t(train.targets[index].size()) - 1;
    tokens +=
        int64_t(train.sources[index].size() + train.targets[index].size()) - 1;
  }
  // This rank's share: a contiguous slice, the sentences split evenly.
  int rank = s.job ? s.job->rank() : 0, ranks = s.job ? s.job->size() : 1;
  size_t begin = batch.size() * rank / ranks;
  size_t end = batch.size() * (rank + 1) / ranks;
  std::vector<std::vector<int64_t>> src, tgt;
  for (size_t i = begin; i < end; ++i) {
    src.push_back(train.sources[batch[i]]);
    tgt.push_back(train.targets[batch[i]]);
  }
  if (src.empty()) {
    // More ranks than sentences: padding alone, which adds no token, no
    // loss and no gradient, but takes part in the all-reduces.
    src = {{0}};
    tgt = {{0, 0}};
  }
  auto srcIds = idsTensor(src);
  auto tgtIds = idsTensor(tgt);
  if (!srcIds || !tgtIds)
    return !srcIds ? srcIds.takeError() : tgtIds.takeError();
  // Each rank draws its own dropout masks; rank 0's are a lone run's.
  int64_t seed = stepSeed(s.seed, at.step + 1);
  if (rank > 0)
    seed = int64_t((uint64_t(seed) ^ (uint64_t(rank) * 0xD1B54A32D192ED03ull)) &
                   uint64_t(INT64_MAX));
  return runTrainStep(model, *srcIds, *tgtIds, seed, at.step + 1);
}

void Trainer::writeMetrics(const std::string &line) {
  if (!leader())
    return;
  std::ofstream out(s.dir + "/" + kMetricsFile, std::ios::app);
  out << line << "\n";
}

void Trainer::report(bool force) {
  auto now = Clock::now();
  double window = std::chrono::duration<double>(now - windowStart).count();
  if (windowSteps > 0) {
    lastLoss = windowLoss / double(std::max<int64_t>(1, windowTargets));
    lastRate = window > 0 ? windowTokens / window : 0;
    if (s.job) {
      double waited = s.job->waitSeconds();
      lastWait = window > 0 ? (waited - windowWaitStart) / window : 0;
    }
  }
  // A job's ranks: what this one waited for the others, and the ranks.
  std::string ranks = s.job ? llvm::formatv("  {0} ranks, {1:P0} waiting",
                                            s.job->size(), lastWait)
                                  .str()
                            : "";
  double lr = learningRate(s.schedule, std::max<int64_t>(1, at.step));
  // Total steps: the limit, or the epochs at this epoch's size.
  int64_t total = s.steps;
  if (s.epochs > 0) {
    int64_t byEpochs = at.step + (s.epochs - at.epoch) * batchesThisEpoch +
                       (batchesThisEpoch - at.batch);
    total = total > 0 ? std::min(total, byEpochs) : byEpochs;
  }
  double eta =
      stepsRun > 0 ? (total - at.step) * (stepSeconds / double(stepsRun)) : 0;
  bool logLine = force || at.step % s.logEvery == 0;
  // Rank 0 reports for the job; every rank keeps its window.
  if (leader() && s.progressBar) {
    // One line redrawn at most five times a second, and kept for a report.
    if (logLine || now - lastDraw > std::chrono::milliseconds(200)) {
      lastDraw = now;
      const int width = 24;
      int filled =
          total > 0 ? int(width * at.step / std::max<int64_t>(1, total)) : 0;
      std::string bar(std::min(filled, width), '#');
      bar.resize(width, '.');
      std::printf("\r\033[K[%s] step %lld/%lld  epoch %lld  loss %.4f  %.0f "
                  "tok/s  lr %.2e%s  ETA %s",
                  bar.c_str(), (long long)at.step, (long long)total,
                  (long long)at.epoch, lastLoss, lastRate, lr, ranks.c_str(),
                  clockString(eta).c_str());
      if (logLine)
        std::printf("\n");
      std::fflush(stdout);
    }
  } else if (leader() && logLine) {
    std::printf("step %lld/%lld  epoch %lld  loss %.4f  %.0f tok/s  lr %.2e%s  "
                "elapsed %s  ETA %s\n",
                (long long)at.step, (long long)total, (long long)at.epoch,
                lastLoss, lastRate, lr, ranks.c_str(),
                clockString(elapsed()).c_str(), clockString(eta).c_str());
    std::fflush(stdout);
  }
  if (logLine && windowSteps > 0) {
    writeMetrics(llvm::formatv("{{\"type\": \"train\", \"step\": {0}, "
                               "\"epoch\": {1}, \"loss\": {2}, \"lr\": {3}, "
                               "\"tokens_per_s\": {4}, \"tokens\": {5}, "
                               "\"elapsed_s\": {6}, \"ranks\": {7}, "
                               "\"wait_share\": {8}}",
                               at.step, at.epoch, json(lastLoss), json(lr),
                               json(lastRate), at.tokens, json(elapsed()),
                               s.job ? s.job->size() : 1, json(lastWait))
                     .str());
    windowLoss = 0;
    windowTargets = windowTokens = windowSteps = 0;
    windowStart = Clock::now();
    if (s.job)
      windowWaitStart = s.job->waitSeconds();
  }
}

llvm::Error Trainer::checkpoint(bool validate) {
  // Every rank holds the same parameters and moments: rank 0 validates and
  // writes them, the others go on to the next step and wait for it there.
  if (!leader())
    return llvm::Error::success();
  double bleu = NAN;
  int64_t epoch = at.lastEpoch();
  if (validate && valid) {
    ValidationLimits limits{s.maxTokens, s.maxSentences, s.maxLen};
    auto result = cli::validate(model, *valid, tokenizer, limits);
    if (!result)
      return result.takeError();
    bleu = result->bleu.score;
    bool best = bleu > at.bestBleu;
    if (best) {
      at.bestBleu = bleu;
      at.bestStep = at.step;
    }
    std::printf("validation at step %lld (epoch %lld): loss %.4f (ppl %.2f), "
                "greedy BLEU %.2f%s  [%.1fs]\n",
                (long long)at.step, (long long)epoch, result->nll,
                std::exp(result->nll), bleu, best ? " (best)" : "",
                result->seconds);
    std::fflush(stdout);
    writeMetrics(llvm::formatv("{{\"type\": \"valid\", \"step\": {0}, "
                               "\"epoch\": {1}, \"valid_nll\": {2}, "
                               "\"valid_ppl\": {3}, \"valid_bleu\": {4}, "
                               "\"valid_s\": {5}, \"elapsed_s\": {6}}",
                               at.step, epoch, json(result->nll),
                               json(std::exp(result->nll)), json(bleu),
                               json(result->seconds), json(elapsed()))
                     .str());
    curves.update();
  }
  Metadata metadata = savedMetadata();
  if (std::isfinite(bleu))
    metadata["valid_bleu"] = metadataNumber(bleu);
  std::string path = checkpointPath(s.dir, at.step);
  if (llvm::Error err = saveState(model, path, metadata))
    return err;
  auto deleted = pruneCheckpoints(s.dir, s.keep, at.bestStep);
  if (!deleted)
    return deleted.takeError();
  return llvm::Error::success();
}

int Trainer::run() {
  auto fail = [](llvm::Error err) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nloom train: error: %s\n",
                 llvm::toString(std::move(err)).c_str());
    return 1;
  };
  stopSignal = 0;
  auto previousInt = std::signal(SIGINT, onStopSignal);
  auto previousTerm = std::signal(SIGTERM, onStopSignal);
  struct RestoreSignals {
    decltype(previousInt) i, t;
    ~RestoreSignals() {
      std::signal(SIGINT, i);
      std::signal(SIGTERM, t);
    }
  } restore{previousInt, previousTerm};

  int64_t lastSaved = at.step;
  while (!finished()) {
    std::vector<text::Batch> batches =
        text::makeEpoch(lengths, s.maxTokens, s.seed, at.epoch, s.maxSentences);
    batchesThisEpoch = int64_t(batches.size());
    if (at.batch >= batchesThisEpoch) { // a position past the epoch's end
      ++at.epoch;
      at.batch = 0;
      continue;
    }
    bool epochEnds = false;
    while (!epochEnds && !finished()) {
      auto stepStart = Clock::now();
      int64_t tokens = 0, targets = 0;
      auto loss = step(batches[at.batch], tokens, targets);
      if (!loss)
        return fail(loss.takeError());
      if (!std::isfinite(*loss)) {
        std::string last =
            lastSaved > 0 ? "the last checkpoint, " +
                                checkpointPath(s.dir, lastSaved) + ", is intact"
                          : "no checkpoint was written yet";
        return fail(error(llvm::formatv(
            "the loss is {0} at step {1} (epoch {2}, batch {3}); training "
            "stops and this step's parameters are not saved; {4}. A lower "
            "--lr-scale, a longer --warmup or --clip-norm may help; "
            "continue with --resume",
            *loss, at.step + 1, at.epoch, at.batch + 1, last)));
      }
      ++at.step;
      ++at.batch;
      at.tokens += tokens;
      // The loss is a mean over the batch's targets; the window's mean
      // weighs each batch by them.
      windowLoss += *loss * double(targets);
      windowTargets += targets;
      windowTokens += tokens;
      ++windowSteps;
      stepSeconds +=
          std::chrono::duration<double>(Clock::now() - stepStart).count();
      ++stepsRun;
      epochEnds = at.batch == batchesThisEpoch;
      // The ranks of a job stop together: a signal may reach them steps
      // apart.
      int stopping = stopSignal;
      if (s.job) {
        std::vector<double> signal = {double(stopping)};
        if (Status agreed = s.job->allReduceHost(signal); !agreed.ok())
          return fail(toError(agreed));
        stopping = signal[0] > 0 ? (stopping ? stopping : SIGTERM) : 0;
      }
      bool due = s.validEvery > 0 ? at.step % s.validEvery == 0 : epochEnds;
      bool last = (s.steps > 0 && at.step >= s.steps) ||
                  (epochEnds && s.epochs > 0 && at.epoch >= s.epochs);
      report(due || last);
      // The position saved is the next batch's.
      if (epochEnds) {
        ++at.epoch;
        at.batch = 0;
      }
      if (!due && !last && !stopping)
        continue;
      if (llvm::Error err = checkpoint(/*validate=*/!stopping))
        return fail(std::move(err));
      lastSaved = at.step;
      if (stopping) {
        curves.finish();
        if (leader())
          std::printf("\nstopped by signal %d at step %lld; saved %s; "
                      "continue with --resume\n",
                      stopping, (long long)at.step,
                      checkpointPath(s.dir, at.step).c_str());
        return 130;
      }
    }
  }
  if (!leader())
    return 0;
  // The final parameters, for `loom translate --model DIR` as they are.
  if (llvm::Error err = saveState(model, s.dir + "/model.safetensors",
                                  savedMetadata(), /*parametersOnly=*/true))
    return fail(std::move(err));
  std::printf("done: %lld steps (through epoch %lld) in %s\n",
              (long long)at.step, (long long)at.lastEpoch(),
              clockString(elapsed()).c_str());
  if (at.bestStep > 0)
    std::printf("best greedy BLEU %.2f at step %lld\n", at.bestBleu,
                (long long)at.bestStep);
  std::printf("parameters: %s/model.safetensors; average the last "
              "checkpoints with `loom average %s`\n",
              s.dir.c_str(), s.dir.c_str());
  curves.finish();
  return 0;
}

} // namespace

llvm::Error truncateMetrics(const std::string &dir, int64_t step) {
  std::string path = dir + "/" + kMetricsFile;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return llvm::Error::success(); // a run that never reported
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
    return llvm::Error::success();
  return toError(
      writeFileAtomically(path, {BytePiece{kept.data(), kept.size()}}));
}

void TrainPosition::save(Metadata &m) const {
  m["step"] = std::to_string(step);
  m["epoch"] = std::to_string(epoch);
  m["batch"] = std::to_string(batch);
  m["tokens"] = std::to_string(tokens);
  m["elapsed_s"] = metadataNumber(seconds);
  m["best_step"] = std::to_string(bestStep);
  m["best_bleu"] = metadataNumber(bestBleu);
}

llvm::Expected<TrainPosition> TrainPosition::load(const Metadata &m) {
  TrainPosition p;
  bool ok = true;
  p.step = metadataInt(m, "step", ok);
  p.epoch = metadataInt(m, "epoch", ok);
  p.batch = metadataInt(m, "batch", ok);
  p.tokens = metadataInt(m, "tokens", ok);
  p.seconds = metadataDouble(m, "elapsed_s", ok);
  p.bestStep = metadataInt(m, "best_step", ok);
  p.bestBleu = metadataDouble(m, "best_bleu", ok);
  if (!ok || p.step < 0 || p.epoch < 1 || p.batch < 0)
    return error("the checkpoint's metadata does not say where training "
                 "stood (step, epoch, batch, tokens, ...)");
  return p;
}

int runTraining(runtime::Session &model, const TrainSettings &settings,
                TrainPosition position, const TrainData &train,
                const ValidationSet *valid, const text::Tokenizer &tokenizer,
                const Metadata &runMetadata) {
  Trainer trainer(model, settings, position, train, valid, tokenizer,
                  runMetadata);
  return trainer.run();
}

} // namespace loom::cli
