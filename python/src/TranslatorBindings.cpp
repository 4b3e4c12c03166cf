//===- TranslatorBindings.cpp - loom.Translator ---------------------------===//
//
// The runtime's translator (api/Translator.h) with every decoding option of
// the C API as a keyword argument. Calls release the GIL while they decode
// and may come from several Python threads at once: the translator runs
// them one at a time, each on all its threads, as the C API does. Ctrl-C
// stops a call before its next batch.
//
//===----------------------------------------------------------------------===//

#include "python/src/Bindings.h"

#include "python/src/Errors.h"
#include "python/src/Interrupts.h"

#include "api/TranslateStream.h"
#include "api/Translator.h"

#include <pybind11/stl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace py = pybind11;

namespace loom::python {

namespace {

/// One sentence's n-best: what Translator.translate returns per sentence.
struct TranslationResult {
  std::vector<std::string> hypotheses;
  /// With return_scores: the length-normalized score and the sum of the
  /// tokens' log-probabilities of each hypothesis.
  std::vector<double> scores;
  std::vector<double> logProbs;
  /// With alignments: per hypothesis, (source piece, target piece) pairs.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> alignments;
};

/// The keyword arguments of translate() and translate_file(), in the order
/// the signature lists them after the first.
TranslationOptions
optionsFrom(int64_t beam, double alpha, int64_t nbest, double maxLenRatio,
            int64_t batch, int64_t batchTokens, bool splitLong,
            int64_t minLength, int64_t maxLength, double repetitionPenalty,
            int64_t noRepeatNgram, std::vector<std::string> forbidden,
            bool lengthPenaltyPower, int64_t samplingTopK, double samplingTopP,
            double samplingTemperature, uint64_t seed, bool alignments,
            int64_t alignmentLayer) {
  TranslationOptions o;
  o.beam = beam;
  o.alpha = alpha;
  o.nbest = nbest;
  o.maxLenRatio = maxLenRatio;
  o.batch = batch;
  o.batchTokens = batchTokens;
  o.splitLong = splitLong;
  o.minLength = minLength;
  o.maxLength = maxLength;
  o.repetitionPenalty = repetitionPenalty;
  o.noRepeatNgram = noRepeatNgram;
  o.forbidden = std::move(forbidden);
  o.powerLengthPenalty = lengthPenaltyPower;
  o.samplingTopK = samplingTopK;
  o.samplingTopP = samplingTopP;
  o.samplingTemperature = samplingTemperature;
  o.seed = seed;
  o.alignments = alignments;
  o.alignmentLayer = alignmentLayer;
  return o;
}

/// A list of str, refusing a bare str (a common slip: its characters would
/// be translated one by one) and anything that is not text.
std::vector<std::string> stringList(py::handle value, const char *what) {
  if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value))
    invalid(std::string(what) +
            " must be a list of strings, not a single string");
  std::vector<std::string> out;
  size_t i = 0;
  for (py::handle item : py::iter(value)) {
    if (!py::isinstance<py::str>(item))
      invalid(std::string(what) + "[" + std::to_string(i) + "] is " +
              std::string(py::str(py::type::of(item).attr("__name__"))) +
              ", not str");
    out.push_back(item.cast<std::string>());
    ++i;
  }
  return out;
}

/// Each warning (a sentence translated in parts) as a RuntimeWarning; one
/// that the warnings filter turns into an error raises it.
void warnAll(const std::vector<std::string> &warnings) {
  for (const std::string &warning : warnings)
    if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) < 0)
      throw py::error_already_set();
}

#define LOOM_TRANSLATION_ARGS                                                  \
  py::arg("beam") = 4, py::arg("alpha") = 0.6, py::arg("nbest") = 1,           \
  py::arg("max_len_ratio") = 1.5, py::arg("batch") = 32,                       \
  py::arg("batch_tokens") = 0, py::arg("split_long") = false,                  \
  py::arg("min_length") = 0, py::arg("max_length") = 0,                        \
  py::arg("repetition_penalty") = 1.0, py::arg("no_repeat_ngram_size") = 0,    \
  py::arg("forbidden") = std::vector<std::string>(),                           \
  py::arg("length_penalty_power") = false, py::arg("sampling_topk") = 1,       \
  py::arg("sampling_topp") = 1.0, py::arg("sampling_temperature") = 1.0,       \
  py::arg("seed") = 0, py::arg("alignments") = false,                          \
  py::arg("alignment_layer") = -1

py::list translate(TranslatorHandle &t, py::handle sentencesArg,
                   bool returnScores, py::object targetPrefixesArg,
                   int64_t beam, double alpha, int64_t nbest,
                   double maxLenRatio, int64_t batch, int64_t batchTokens,
                   bool splitLong, int64_t minLength, int64_t maxLength,
                   double repetitionPenalty, int64_t noRepeatNgram,
                   std::vector<std::string> forbidden, bool lengthPenaltyPower,
                   int64_t samplingTopK, double samplingTopP,
                   double samplingTemperature, uint64_t seed, bool alignments,
                   int64_t alignmentLayer) {
  std::vector<std::string> sentences = stringList(sentencesArg, "sentences");
  std::vector<std::string> prefixes;
  if (!targetPrefixesArg.is_none())
    prefixes = stringList(targetPrefixesArg, "target_prefixes");
  TranslationOptions o = optionsFrom(
      beam, alpha, nbest, maxLenRatio, batch, batchTokens, splitLong, minLength,
      maxLength, repetitionPenalty, noRepeatNgram, std::move(forbidden),
      lengthPenaltyPower, samplingTopK, samplingTopP, samplingTemperature, seed,
      alignments, alignmentLayer);
  o.scores = returnScores;
  std::vector<std::string> warnings;
  InterruptWatch watch;
  auto translated = withoutGil([&] {
    return t.translator->translate(
        sentences, prefixes, o,
        [&](const std::string &warning) { warnings.push_back(warning); },
        [&] { return watch.check(); });
  });
  raiseIfInterrupted(watch);
  warnAll(warnings);
  py::list out;
  for (std::vector<Translation> &nbestList : take(std::move(translated))) {
    TranslationResult r;
    for (Translation &h : nbestList) {
      r.hypotheses.push_back(std::move(h.text));
      if (returnScores) {
        r.scores.push_back(h.score);
        r.logProbs.push_back(h.logProb);
      }
      if (alignments)
        r.alignments.push_back(std::move(h.alignment));
    }
    out.append(std::move(r));
  }
  return out;
}

py::dict translateFile(TranslatorHandle &t, const std::string &source,
                       const std::string &output, bool withScores,
                       std::string targetPrefixFile, int64_t beam, double alpha,
                       int64_t nbest, double maxLenRatio, int64_t batch,
                       int64_t batchTokens, bool splitLong, int64_t minLength,
                       int64_t maxLength, double repetitionPenalty,
                       int64_t noRepeatNgram,
                       std::vector<std::string> forbidden,
                       bool lengthPenaltyPower, int64_t samplingTopK,
                       double samplingTopP, double samplingTemperature,
                       uint64_t seed, bool alignments, int64_t alignmentLayer) {
  if (source.empty() || output.empty())
    invalid("translate_file needs a source and an output path");
  TranslationOptions o = optionsFrom(
      beam, alpha, nbest, maxLenRatio, batch, batchTokens, splitLong, minLength,
      maxLength, repetitionPenalty, noRepeatNgram, std::move(forbidden),
      lengthPenaltyPower, samplingTopK, samplingTopP, samplingTemperature, seed,
      false, alignmentLayer);
  TranslateStreamOptions input;
  input.path = source;
  input.targetPrefixPath = targetPrefixFile;
  input.withScores = withScores;
  input.withAlignments = alignments;
  InterruptWatch watch;
  input.beforeBatch = [&] { return watch.check(); };
  // Written beside the output and renamed over it once whole: an error or
  // an interruption leaves no half-written file where the output goes.
  std::string partial = output + ".partial";
  std::vector<std::string> warnings;
  TranslationTimes times;
  Status status = withoutGil([&]() -> Status {
    std::FILE *out = std::fopen(partial.c_str(), "wb");
    if (!out)
      return Status::failure("cannot write '" + partial +
                                 "': " + std::strerror(errno),
                             ErrorCode::Io);
    Status done = translateStream(
        *t.translator, o, input, out,
        [&](const std::string &warning) { warnings.push_back(warning); });
    if (std::fclose(out) != 0 && done.ok())
      done = Status::failure("cannot write '" + partial + "'", ErrorCode::Io);
    if (done.ok() && std::rename(partial.c_str(), output.c_str()) != 0)
      done = Status::failure("cannot rename '" + partial + "' to '" + output +
                                 "': " + std::strerror(errno),
                             ErrorCode::Io);
    if (!done.ok())
      std::remove(partial.c_str());
    return done;
  });
  raiseIfInterrupted(watch);
  warnAll(warnings);
  check(status);
  py::dict stats;
  stats["source"] = source;
  stats["output"] = output;
  return stats;
}

} // namespace

void bindTranslator(py::module_ &m) {
  py::class_<TranslationResult>(
      m, "TranslationResult",
      "One sentence's translations, best first: `hypotheses`, and with "
      "return_scores their `scores` (log-probability over the length "
      "penalty) and `log_probs`; with alignments, per hypothesis its "
      "(source piece, target piece) pairs.")
      .def_readonly("hypotheses", &TranslationResult::hypotheses)
      .def_readonly("scores", &TranslationResult::scores)
      .def_readonly("log_probs", &TranslationResult::logProbs)
      .def_readonly("alignments", &TranslationResult::alignments)
      .def("__len__",
           [](const TranslationResult &r) { return r.hypotheses.size(); })
      .def("__getitem__",
           [](const TranslationResult &r, size_t i) {
             if (i >= r.hypotheses.size())
               throw py::index_error("hypothesis " + std::to_string(i) +
                                     " of " +
                                     std::to_string(r.hypotheses.size()));
             return r.hypotheses[i];
           })
      .def("__repr__", [](const TranslationResult &r) {
        std::string text = "TranslationResult(hypotheses=" +
                           std::string(py::repr(py::cast(r.hypotheses)));
        if (!r.scores.empty())
          text += ", scores=" + std::string(py::repr(py::cast(r.scores)));
        return text + ")";
      });

  py::class_<TranslatorHandle>(
      m, "Translator",
      "A translator folder (what `loom export` writes, or a `loom train` "
      "run directory with its translate.loomx) opened for translating. "
      "Safe to share between Python threads; calls run one at a time, each "
      "on all the translator's threads, without the GIL.")
      .def(py::init([](const std::string &folder, py::object device,
                       py::object threads, int workers, py::object executable,
                       py::object weights) {
             TranslatorOptions options;
             options.threads = threads.is_none() ? 0 : threads.cast<int>();
             if (options.threads < 0)
               invalid("threads must be positive, or None for one per "
                       "hardware thread");
             options.workers = workers;
             if (!device.is_none())
               options.device = device.cast<std::string>();
             if (!executable.is_none())
               options.executable = executable.cast<std::string>();
             if (!weights.is_none())
               options.weights = weights.cast<std::string>();
             auto opened =
                 withoutGil([&] { return Translator::open(folder, options); });
             return TranslatorHandle{take(std::move(opened))};
           }),
           py::arg("folder"), py::arg("device") = py::none(),
           py::arg("threads") = py::none(), py::arg("workers") = 1,
           py::arg("executable") = py::none(), py::arg("weights") = py::none(),
           "Opens translator folder `folder`: its translate.loomx, "
           "model.safetensors and spm.model (or `executable` and `weights` "
           "in their place), on `device` ('cpu', 'cuda', 'cuda:N'; None: the "
           "one the executable is for) with `threads` CPU threads (None: one "
           "per hardware thread) split over `workers` decoders.")
      .def("translate", &translate, py::arg("sentences"),
           py::arg("return_scores") = false,
           py::arg("target_prefixes") = py::none(), LOOM_TRANSLATION_ARGS,
           "Translates a list of sentences; per sentence a TranslationResult "
           "with its `nbest` hypotheses, best first. beam 1 is greedy; "
           "alpha is the length penalty ((5 + len) / 6)^alpha, or "
           "len^alpha with length_penalty_power; max_len_ratio bounds the "
           "output per source token, max_length and min_length in tokens; "
           "batch sentences (or batch_tokens source tokens) decode together; "
           "split_long translates a sentence longer than the model takes in "
           "parts (else it is refused); repetition_penalty > 1 and "
           "no_repeat_ngram_size > 0 discourage repeats; `forbidden` words "
           "never appear; `target_prefixes` (one per sentence, '' for none) "
           "start the translations; sampling_topk != 1 samples (beam 1) "
           "from the k likeliest, within sampling_topp, at "
           "sampling_temperature, seeded by `seed` and each sentence; "
           "alignments gives (source piece, target piece) pairs from "
           "decoder layer alignment_layer (-1: the last). A blank sentence "
           "translates to ''. A sentence's translation does not depend on "
           "the others in the call.")
      .def("translate_file", &translateFile, py::arg("source"),
           py::arg("output"), py::arg("with_scores") = false,
           py::arg("target_prefix_file") = "", LOOM_TRANSLATION_ARGS,
           "Translates the file `source`, one sentence per line, into "
           "`output` exactly as `loom translate --input source` prints them "
           "(its n-best lines; with_scores puts each score and a tab first, "
           "alignments a tab and the pairs after). The output appears only "
           "once whole. The options are translate()'s.")
      .def_property_readonly(
          "workers",
          [](const TranslatorHandle &t) { return t.translator->workers(); })
      .def_property_readonly("max_source_tokens",
                             [](const TranslatorHandle &t) {
                               return t.translator->maxSourceTokens();
                             });
}

} // namespace loom::python
