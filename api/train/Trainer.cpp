//===- Trainer.cpp - Training a compiled model ----------------------------===//

#include "api/train/Trainer.h"

#include "runtime/TrainStep.h"
#include "text/Batching.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>

namespace loom::train {

namespace {

using Clock = std::chrono::steady_clock;

/// Set by requestStop; the loop saves a checkpoint at the next step
/// boundary and stops.
std::atomic<int> stopSignal{0};

extern "C" void onStopSignal(int signal) { requestStop(signal); }

/// The dropout seed of one step: the run's seed and the step, mixed
/// (splitmix64), so that steps draw unrelated masks and a resumed run draws
/// the same ones.
int64_t stepSeed(uint64_t seed, int64_t step) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}

/// A loss as the error names it: "nan", "inf" or "-inf".
std::string describeLoss(double loss) {
  if (std::isnan(loss))
    return "nan";
  return loss > 0 ? "inf" : "-inf";
}

/// Metadata `key` as a whole integer (double); `ok` turns false when it is
/// missing or not one.
int64_t metadataInt(const Metadata &m, const std::string &key, bool &ok) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) {
    ok = false;
    return 0;
  }
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(it->second.c_str(), &end, 10);
  if (*end != '\0' || errno != 0)
    ok = false;
  return value;
}

double metadataDouble(const Metadata &m, const std::string &key, bool &ok) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) {
    ok = false;
    return 0;
  }
  char *end = nullptr;
  double value = std::strtod(it->second.c_str(), &end);
  if (*end != '\0')
    ok = false;
  return value;
}

class Trainer {
public:
  Trainer(runtime::Session &model, const TrainerOptions &options,
          TrainPosition position, const TrainData &data,
          const ValidationSet *valid, const text::Tokenizer *tokenizer,
          const Metadata &runMetadata,
          const std::vector<TrainObserver *> &observers)
      : model(model), o(options), at(position), data(data), valid(valid),
        tokenizer(tokenizer), runMetadata(runMetadata), observers(observers) {
    for (size_t i = 0; i < data.sources.size(); ++i)
      lengths.push_back(
          {int64_t(data.sources[i].size()), int64_t(data.targets[i].size())});
  }

  ErrorOr<TrainEnd> run();

private:
  bool leader() const { return !o.job || o.job->rank() == 0; }
  bool finished() const {
    return (o.steps > 0 && at.step >= o.steps) ||
           (o.epochs > 0 && at.epoch > o.epochs) || outOfTime();
  }
  bool outOfTime() const {
    return o.timeLimitSeconds > 0 &&
           std::chrono::duration<double>(Clock::now() - started).count() >=
               o.timeLimitSeconds;
  }
  /// Runs one batch; `tokens` counts its real source and target tokens,
  /// `targets` the target tokens the loss averages over.
  ErrorOr<double> step(const text::Batch &batch, int64_t &tokens,
                       int64_t &targets);
  void report(bool logged);
  /// Validates (when asked and there is a set) and writes a checkpoint;
  /// its path.
  ErrorOr<std::string> checkpoint(bool validate);
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
  template <typename F> void tell(F &&f) {
    if (leader())
      for (TrainObserver *observer : observers)
        f(*observer);
  }

  runtime::Session &model;
  const TrainerOptions &o;
  TrainPosition at;
  const TrainData &data;
  const ValidationSet *valid;
  const text::Tokenizer *tokenizer;
  const Metadata &runMetadata;
  const std::vector<TrainObserver *> &observers;
  std::vector<text::PairLengths> lengths;

  Clock::time_point started = Clock::now();
  int64_t batchesThisEpoch = 0;
  // Since the last logged report: loss summed over target tokens, tokens,
  // time.
  double windowLoss = 0;
  int64_t windowTargets = 0, windowTokens = 0, windowSteps = 0;
  Clock::time_point windowStart = Clock::now();
  double lastLoss = NAN, lastRate = 0, lastWait = 0;
  // The job's wait time when the window began.
  double windowWaitStart = 0;
  // Step time of this process, for the ETA.
  double stepSeconds = 0;
  int64_t stepsRun = 0;
};

ErrorOr<double> Trainer::step(const text::Batch &batch, int64_t &tokens,
                              int64_t &targets) {
  // The global batch's tokens, which every rank knows.
  tokens = targets = 0;
  for (int64_t index : batch) {
    targets += int64_t(data.targets[index].size()) - 1;
    tokens +=
        int64_t(data.sources[index].size() + data.targets[index].size()) - 1;
  }
  // This rank's share: a contiguous slice, the sentences split evenly.
  int rank = o.job ? o.job->rank() : 0, ranks = o.job ? o.job->size() : 1;
  size_t begin = batch.size() * rank / ranks;
  size_t end = batch.size() * (rank + 1) / ranks;
  std::vector<std::vector<int64_t>> src, tgt;
  for (size_t i = begin; i < end; ++i) {
    src.push_back(data.sources[batch[i]]);
    tgt.push_back(data.targets[batch[i]]);
  }
  if (src.empty()) {
    // More ranks than sentences: padding alone, which adds no token, no
    // loss and no gradient, but takes part in the all-reduces.
    src = {{0}};
    tgt = {{0, 0}};
  }
  ErrorOr<runtime::Tensor> srcIds = runtime::idsTensor(src);
  ErrorOr<runtime::Tensor> tgtIds = runtime::idsTensor(tgt);
  if (!srcIds || !tgtIds)
    return !srcIds ? srcIds.status() : tgtIds.status();
  // Each rank draws its own dropout masks; rank 0's are a lone run's.
  int64_t seed = stepSeed(o.seed, at.step + 1);
  if (rank > 0)
    seed = int64_t((uint64_t(seed) ^ (uint64_t(rank) * 0xD1B54A32D192ED03ull)) &
                   uint64_t(INT64_MAX));
  return runtime::runTrainStep(model, srcIds->ref(), tgtIds->ref(), seed,
                               at.step + 1);
}

void Trainer::report(bool logged) {
  auto now = Clock::now();
  double window = std::chrono::duration<double>(now - windowStart).count();
  if (windowSteps > 0) {
    lastLoss = windowLoss / double(std::max<int64_t>(1, windowTargets));
    lastRate = window > 0 ? windowTokens / window : 0;
    if (o.job) {
      double waited = o.job->waitSeconds();
      lastWait = window > 0 ? (waited - windowWaitStart) / window : 0;
    }
  }
  StepReport r;
  r.step = at.step;
  r.epoch = at.epoch;
  r.loss = lastLoss;
  r.tokensPerSecond = lastRate;
  r.learningRate = o.schedule.at(std::max<int64_t>(1, at.step));
  r.tokens = at.tokens;
  r.elapsedSeconds = elapsed();
  r.ranks = o.job ? o.job->size() : 1;
  r.waitShare = lastWait;
  // Total steps: the limit, or the epochs at this epoch's size.
  r.totalSteps = o.steps;
  if (o.epochs > 0) {
    // Saturating: --epochs 10^18 is a run without end, not a negative total.
    int64_t later = 0, byEpochs = 0;
    if (__builtin_mul_overflow(o.epochs - at.epoch, batchesThisEpoch, &later) ||
        __builtin_add_overflow(at.step + (batchesThisEpoch - at.batch), later,
                               &byEpochs))
      byEpochs = std::numeric_limits<int64_t>::max();
    r.totalSteps =
        r.totalSteps > 0 ? std::min(r.totalSteps, byEpochs) : byEpochs;
  }
  r.etaSeconds =
      stepsRun > 0 ? (r.totalSteps - at.step) * (stepSeconds / double(stepsRun))
                   : 0;
  r.logged = (logged || at.step % o.logEvery == 0) && windowSteps > 0;
  tell([&](TrainObserver &observer) { observer.onStep(r); });
  if (r.logged) {
    // Every rank keeps its window; rank 0 reports it for the job.
    windowLoss = 0;
    windowTargets = windowTokens = windowSteps = 0;
    windowStart = Clock::now();
    if (o.job)
      windowWaitStart = o.job->waitSeconds();
  }
}

ErrorOr<std::string> Trainer::checkpoint(bool validate) {
  std::string path = checkpointPath(o.dir, at.step);
  // Every rank holds the same parameters and moments: rank 0 validates and
  // writes them, the others go on to the next step and wait for it there.
  if (!leader())
    return path;
  double bleu = NAN;
  if (validate && valid) {
    ValidationLimits limits{o.maxTokens, o.maxSentences, o.maxLen};
    ErrorOr<ValidationResult> result =
        train::validate(model, *valid, *tokenizer, limits);
    if (!result)
      return result.status();
    bleu = result->bleu.score;
    ValidationReport r;
    r.best = bleu > at.bestBleu;
    if (r.best) {
      at.bestBleu = bleu;
      at.bestStep = at.step;
    }
    r.step = at.step;
    r.epoch = at.lastEpoch();
    r.nll = result->nll;
    r.bleu = bleu;
    r.seconds = result->seconds;
    r.elapsedSeconds = elapsed();
    tell([&](TrainObserver &observer) { observer.onValidation(r); });
  }
  if (o.dir.empty())
    return std::string();
  Metadata metadata = savedMetadata();
  if (std::isfinite(bleu))
    metadata["valid_bleu"] = metadataNumber(bleu);
  LOOM_RETURN_IF_ERROR(saveState(model, path, metadata));
  ErrorOr<std::vector<std::string>> deleted =
      pruneCheckpoints(o.dir, o.keep, at.bestStep);
  if (!deleted)
    return deleted.status();
  tell([&](TrainObserver &observer) { observer.onCheckpoint(at.step, path); });
  return path;
}

ErrorOr<TrainEnd> Trainer::run() {
  stopSignal = 0;
  int64_t lastSaved = at.step;
  while (!finished()) {
    std::vector<text::Batch> batches =
        text::makeEpoch(lengths, o.maxTokens, o.seed, at.epoch, o.maxSentences);
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
      ErrorOr<double> loss = step(batches[at.batch], tokens, targets);
      if (!loss)
        return loss.status();
      if (!std::isfinite(*loss)) {
        std::string last =
            lastSaved > 0 ? "the last checkpoint, " +
                                checkpointPath(o.dir, lastSaved) + ", is intact"
                          : "no checkpoint was written yet";
        return Status::failure(
            "the loss is " + describeLoss(*loss) + " at step " +
                std::to_string(at.step + 1) + " (epoch " +
                std::to_string(at.epoch) + ", batch " +
                std::to_string(at.batch + 1) +
                "); training stops and this step's parameters are not "
                "saved; " +
                last +
                ". A lower --lr-scale, a longer --warmup or --clip-norm may "
                "help; continue with --resume",
            ErrorCode::InvalidArgument);
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
      if (o.job) {
        std::vector<double> signal = {double(stopping)};
        LOOM_RETURN_IF_ERROR(o.job->allReduceHost(signal));
        stopping = signal[0] > 0 ? (stopping ? stopping : SIGTERM) : 0;
      }
      bool due = o.validEvery > 0 ? at.step % o.validEvery == 0 : epochEnds;
      bool last = (o.steps > 0 && at.step >= o.steps) ||
                  (epochEnds && o.epochs > 0 && at.epoch >= o.epochs) ||
                  outOfTime();
      report(due || last);
      // The position saved is the next batch's.
      if (epochEnds) {
        ++at.epoch;
        at.batch = 0;
      }
      if (!due && !last && !stopping)
        continue;
      ErrorOr<std::string> saved = checkpoint(/*validate=*/!stopping);
      if (!saved)
        return saved.status();
      lastSaved = at.step;
      if (stopping) {
        TrainEnd end{stopping, at, *saved};
        end.position.seconds = elapsed();
        tell([&](TrainObserver &observer) { observer.onEnd(end); });
        return end;
      }
    }
  }
  TrainEnd end{0, at, o.dir.empty() ? "" : o.dir + "/model.safetensors"};
  end.position.seconds = elapsed();
  if (leader() && !o.dir.empty())
    // The final parameters, for `loom translate --model DIR` as they are.
    LOOM_RETURN_IF_ERROR(
        saveState(model, end.saved, savedMetadata(), /*parametersOnly=*/true));
  tell([&](TrainObserver &observer) { observer.onEnd(end); });
  return end;
}

} // namespace

TrainObserver::~TrainObserver() = default;
void TrainObserver::onStep(const StepReport &) {}
void TrainObserver::onValidation(const ValidationReport &) {}
void TrainObserver::onCheckpoint(int64_t, const std::string &) {}
void TrainObserver::onEnd(const TrainEnd &) {}

void requestStop(int signal) { stopSignal = signal; }

StopOnSignals::StopOnSignals()
    : previousInt(std::signal(SIGINT, onStopSignal)),
      previousTerm(std::signal(SIGTERM, onStopSignal)) {}

StopOnSignals::~StopOnSignals() {
  std::signal(SIGINT, previousInt);
  std::signal(SIGTERM, previousTerm);
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

ErrorOr<TrainPosition> TrainPosition::load(const Metadata &m) {
  TrainPosition p;
  bool ok = true;
  p.step = metadataInt(m, "step", ok);
  p.epoch = metadataInt(m, "epoch", ok);
  p.batch = metadataInt(m, "batch", ok);
  p.tokens = metadataInt(m, "tokens", ok);
  p.seconds = metadataDouble(m, "elapsed_s", ok);
  p.bestStep = metadataInt(m, "best_step", ok);
  p.bestBleu = metadataDouble(m, "best_bleu", ok);
  if (!ok)
    return Status::failure("the checkpoint's metadata does not say where "
                           "training stood (step, epoch, batch, tokens, ...)",
                           ErrorCode::Corrupt);
  // Each in the range a run can reach: a damaged number would otherwise
  // resume at a step or an epoch no run was at.
  if (p.step < 0 || p.epoch < 1 || p.epoch > p.step + 1 || p.batch < 0 ||
      p.batch > p.step || p.tokens < 0 || !(p.seconds >= 0) ||
      !std::isfinite(p.seconds) || p.bestStep < 0 || p.bestStep > p.step ||
      !(p.bestBleu == -1 || (p.bestBleu >= 0 && p.bestBleu <= 100)))
    return Status::failure(
        "the checkpoint's metadata says training stood at step " +
            std::to_string(p.step) + ", epoch " + std::to_string(p.epoch) +
            ", batch " + std::to_string(p.batch) +
            ", which no run reaches (tokens, seconds and the best step and "
            "BLEU must be in range too): it is damaged",
        ErrorCode::Corrupt);
  return p;
}

ErrorOr<TrainEnd> train(runtime::Session &model, const TrainerOptions &options,
                        TrainPosition position, const TrainData &data,
                        const ValidationSet *valid,
                        const text::Tokenizer *tokenizer,
                        const Metadata &runMetadata,
                        const std::vector<TrainObserver *> &observers) {
  if (valid && !tokenizer)
    return Status::failure("validation needs the tokenizer",
                           ErrorCode::InvalidArgument);
  if (data.sources.empty() || data.sources.size() != data.targets.size())
    return Status::failure(
        "training needs pairs: " + std::to_string(data.sources.size()) +
            " sources and " + std::to_string(data.targets.size()) + " targets",
        ErrorCode::InvalidArgument);
  Trainer trainer(model, options, position, data, valid, tokenizer, runMetadata,
                  observers);
  return trainer.run();
}

} // namespace loom::train
