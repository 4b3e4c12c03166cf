//===- TrainJob.cpp - loom.train's run, whichever module compiles ---------===//

#include "python/src/TrainJob.h"

#include "python/src/Bindings.h"
#include "python/src/Errors.h"
#include "python/src/Interrupts.h"

#include "api/train/Observers.h"
#include "api/train/Trainer.h"

#include <pybind11/stl.h>

#include <csignal>
#include <optional>

namespace py = pybind11;

namespace loom::python {

namespace {

/// Hands each metrics record to a Python callable, with the GIL taken for
/// the call; the first exception it raises stops the run. A Ctrl-C that
/// came before training began (while the model compiled, before the
/// trainer's own handler was in place) stops it at its first step.
class CallbackObserver : public train::TrainObserver {
public:
  CallbackObserver(py::object callback, const InterruptWatch &watch)
      : callback(std::move(callback)), watch(watch) {}

  void onStep(const train::StepReport &report) override {
    if (watch.interrupted())
      train::requestStop(SIGINT);
    if (report.logged)
      deliver(train::metricsRecord(report));
  }
  void onValidation(const train::ValidationReport &report) override {
    deliver(train::metricsRecord(report));
  }
  void onEnd(const train::TrainEnd &end) override { ended = end; }

  /// What the callback raised, if it did.
  std::optional<py::error_already_set> raised;
  std::optional<train::TrainEnd> ended;

private:
  void deliver(const std::string &record) {
    if (callback.is_none() || raised)
      return;
    py::gil_scoped_acquire held;
    try {
      callback(py::module_::import("json").attr("loads")(record));
    } catch (py::error_already_set &e) {
      raised = std::move(e);
      // As Ctrl-C would: the run stops after its next step, saved.
      train::requestStop(SIGINT);
    }
  }

  py::object callback;
  const InterruptWatch &watch;
};

std::pair<std::string, std::string> filePair(py::handle value,
                                             const char *what) {
  auto pair = value.cast<std::vector<std::string>>();
  if (pair.size() != 2)
    invalid(std::string(what) +
            " must be a (source file, target file) pair, got " +
            std::to_string(pair.size()) + " paths");
  return {pair[0], pair[1]};
}

} // namespace

train::JobOptions jobOptionsFrom(py::kwargs args) {
  train::JobOptions o;
  o.command = "loom.train";
  o.drawCurves = false; // the callback is Python's way to plot
  for (auto item : args) {
    std::string key = py::str(item.first);
    py::handle v = item.second;
    if (v.is_none())
      continue;
    auto given = [&](const char *flag) { o.givenSettings.insert(flag); };
    if (key == "train") {
      auto [src, tgt] = filePair(v, "train");
      o.train = {src, tgt};
    } else if (key == "valid") {
      auto [src, tgt] = filePair(v, "valid");
      o.valid = {src, tgt};
    } else if (key == "out") {
      o.dir = v.cast<std::string>();
    } else if (key == "resume") {
      o.resume = v.cast<bool>();
    } else if (key == "steps") {
      o.steps = v.cast<int64_t>();
    } else if (key == "epochs") {
      o.epochs = v.cast<int64_t>();
    } else if (key == "time_limit") {
      o.timeLimitSeconds = v.cast<double>();
    } else if (key == "threads") {
      o.threads = v.cast<int>();
    } else if (key == "device") {
      o.device = v.cast<std::string>();
    } else if (key == "valid_every") {
      o.validEvery = v.cast<int64_t>();
    } else if (key == "log_every") {
      o.logEvery = v.cast<int64_t>();
    } else if (key == "keep") {
      o.keep = v.cast<int64_t>();
    } else if (key == "seed") {
      o.settings.seed = v.cast<uint64_t>();
      given("--seed");
    } else if (key == "max_tokens") {
      o.settings.maxTokens = v.cast<int64_t>();
      given("--max-tokens");
    } else if (key == "max_sentences") {
      o.settings.maxSentences = v.cast<int64_t>();
      given("--max-sentences");
    } else if (key == "warmup") {
      o.settings.warmup = v.cast<int64_t>();
      given("--warmup");
    } else if (key == "lr_scale") {
      o.settings.lrScale = v.cast<double>();
      given("--lr-scale");
    } else if (key == "clip_norm") {
      o.settings.clipNorm = v.cast<double>();
      given("--clip-norm");
    } else if (key == "precision") {
      o.settings.precision = v.cast<std::string>();
      given("--precision");
    } else {
      invalid("loom.train has no argument '" + key + "'");
    }
  }
  if (o.train.empty())
    invalid("loom.train needs train=(source file, target file)");
  if (o.dir.empty())
    invalid("loom.train needs out=DIR, the run's directory");
  if (o.threads < 0)
    invalid("threads must be positive, or None for one per hardware thread");
  return o;
}

py::dict runTrainJob(train::JobOptions options, train::ModelSource &source,
                     py::object callback) {
  InterruptWatch watch;
  CallbackObserver observer(std::move(callback), watch);
  Status failure;
  options.observers.push_back(&observer);
  options.failure = &failure;
  ErrorOr<int> code =
      withoutGil([&] { return train::runTrainingJob(options, source); });
  if (observer.raised)
    throw std::move(*observer.raised);
  int exit = take(std::move(code));
  if (exit == 130) {
    // Python's handler may have noted the signal too (one that came while
    // the model compiled): raising that one consumes it, where a second
    // KeyboardInterrupt would follow the first.
    if (PyErr_CheckSignals() != 0)
      throw py::error_already_set();
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  if (exit != 0)
    raise(failure.ok() ? Status::failure("training failed (exit code " +
                                             std::to_string(exit) + ")",
                                         ErrorCode::Internal)
                       : failure);
  py::dict end;
  if (observer.ended) {
    end["step"] = observer.ended->position.step;
    end["epoch"] = observer.ended->position.lastEpoch();
    end["saved"] = observer.ended->saved;
    end["best_step"] = observer.ended->position.bestStep;
    end["best_bleu"] = observer.ended->position.bestBleu;
  }
  return end;
}

} // namespace loom::python
