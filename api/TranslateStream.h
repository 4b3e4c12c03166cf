//===- TranslateStream.h - Lines in, translations out -----------*- C++ -*-===//
//
// What `loom translate` and `loom-translate` both do with a translator, so
// the two print the same bytes for the same input: read UTF-8 lines (stdin
// or a file; a trailing CR is dropped, invalid UTF-8 is refused with its
// line), translate them, and print each sentence's n-best translations, one
// per line, in input order. Warnings go to `warn` (stderr in the commands).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRANSLATESTREAM_H
#define LOOM_API_TRANSLATESTREAM_H

#include "api/Translator.h"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace loom {

/// The lines of `path`, or of stdin when it is empty.
ErrorOr<std::vector<std::string>> readInputLines(const std::string &path);

/// How long translating the same lines took, run after run: what
/// `--time-runs` reports. The first translation (the one printed) warms the
/// translator up and is not among them.
struct TranslationTimes {
  int64_t sentences = 0;    // lines that are not blank
  int64_t sourceTokens = 0; // as the vocabulary splits them, eos left out
  int64_t targetTokens = 0; // of the best translations, split the same way
  std::vector<double> seconds; // per run
};

/// Where the sentences come from: a file, one per line (empty: stdin),
/// and optionally a file of target prefixes, one per line of it; whether
/// each translation is printed after its score and a tab, and whether
/// followed by a tab and its alignment ("0-0 2-1": source piece - target
/// piece, as TranslationOptions::alignments gives them).
struct TranslateStreamOptions {
  std::string path;
  std::string targetPrefixPath;
  bool withScores = false;
  bool withAlignments = false;
  /// Translator::translate's: asked before each batch, a failure stops it.
  std::function<Status()> beforeBatch;
};

/// Translates the lines `input` names to `out`; then, when `timeRuns` > 0,
/// translates them `timeRuns` more times into `times`.
Status translateStream(Translator &translator,
                       const TranslationOptions &options,
                       const TranslateStreamOptions &input, std::FILE *out,
                       const std::function<void(const std::string &)> &warn,
                       int timeRuns = 0, TranslationTimes *times = nullptr);

/// `times` as one JSON line for stderr: what ran (`system`, the options,
/// `precision` unless empty), run seconds, their median, target tokens and
/// sentences per second at the median.
std::string translationTimesJson(const TranslationTimes &times,
                                 const std::string &system,
                                 const TranslatorOptions &opening,
                                 const TranslationOptions &options,
                                 const std::string &precision = "");

} // namespace loom

#endif // LOOM_API_TRANSLATESTREAM_H
