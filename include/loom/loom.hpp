//===- loom.hpp - Loom's embeddable translator: C++ wrapper -----*- C++ -*-===//
//
// A thin, header-only C++ layer over loom.h: RAII ownership and exceptions
// instead of status codes. The same thread-safety rules apply.
//
//   loom::api::Translator translator("model");
//   for (const auto &best : translator.translate({"A dog runs."}))
//     std::cout << best.front().text << "\n";
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LOOM_HPP
#define LOOM_LOOM_HPP

#include "loom/loom.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::api {

/// A failed call: its status and the message loom.h gave.
class Error : public std::runtime_error {
public:
  Error(loom_status status, const std::string &message)
      : std::runtime_error(message), code(status) {}
  loom_status status() const { return code; }

private:
  loom_status code;
};

struct Translation {
  std::string text;
  double score = 0;
  double logProb = 0;
};

/// A translation's log-probability given its source (loom_score_pairs).
struct PairScore {
  double logProb = 0;
  double score = 0;
  std::vector<std::string> tokens; // eos last
  std::vector<double> tokenLogProbs;
};

class Translator {
public:
  explicit Translator(const std::string &folder, int threads = 0) {
    loom_translator_options options;
    loom_translator_options_init(&options);
    options.threads = threads;
    loom_translator *raw = nullptr;
    char *error = nullptr;
    check(loom_translator_create(folder.c_str(), &options, &raw, &error),
          error);
    handle.reset(raw);
  }

  /// Options with loom.h's defaults.
  static loom_translation_options defaults() {
    loom_translation_options options;
    loom_translation_options_init(&options);
    return options;
  }

  /// Per sentence, its n-best translations, best first.
  std::vector<std::vector<Translation>>
  translate(const std::vector<std::string> &sentences,
            const loom_translation_options &options = defaults()) {
    std::vector<const char *> input;
    for (const std::string &s : sentences)
      input.push_back(s.c_str());
    loom_result *raw = nullptr;
    char *error = nullptr;
    check(loom_translate(handle.get(), input.data(), input.size(), &options,
                         &raw, &error),
          error);
    std::unique_ptr<loom_result, void (*)(loom_result *)> result(
        raw, loom_result_free);
    std::vector<std::vector<Translation>> out(loom_result_count(raw));
    for (size_t s = 0; s < out.size(); ++s)
      for (size_t r = 0; r < loom_result_nbest(raw, s); ++r)
        out[s].push_back({loom_result_text(raw, s, r),
                          loom_result_score(raw, s, r),
                          loom_result_log_prob(raw, s, r)});
    return out;
  }

  static loom_scoring_options scoringDefaults() {
    loom_scoring_options options;
    loom_scoring_options_init(&options);
    return options;
  }

  /// Per pair, the log-probability of targets[i] as the translation of
  /// sources[i].
  std::vector<PairScore>
  scorePairs(const std::vector<std::string> &sources,
             const std::vector<std::string> &targets,
             const loom_scoring_options &options = scoringDefaults()) {
    if (sources.size() != targets.size())
      throw Error(LOOM_ERROR_INVALID_ARGUMENT,
                  "scorePairs takes one target per source");
    std::vector<const char *> src, tgt;
    for (size_t i = 0; i < sources.size(); ++i) {
      src.push_back(sources[i].c_str());
      tgt.push_back(targets[i].c_str());
    }
    loom_scores *raw = nullptr;
    char *error = nullptr;
    check(loom_score_pairs(handle.get(), src.data(), tgt.data(), src.size(),
                           &options, &raw, &error),
          error);
    std::unique_ptr<loom_scores, void (*)(loom_scores *)> scores(
        raw, loom_scores_free);
    std::vector<PairScore> out(loom_scores_count(raw));
    for (size_t p = 0; p < out.size(); ++p) {
      out[p].logProb = loom_scores_log_prob(raw, p);
      out[p].score = loom_scores_score(raw, p);
      for (size_t t = 0; t < loom_scores_tokens(raw, p); ++t) {
        out[p].tokens.push_back(loom_scores_token(raw, p, t));
        out[p].tokenLogProbs.push_back(loom_scores_token_log_prob(raw, p, t));
      }
    }
    return out;
  }

private:
  // `error` by reference: read after the call that fills it, whichever
  // order the caller's arguments are evaluated in.
  static void check(loom_status status, char *&error) {
    if (status == LOOM_OK)
      return;
    std::string message = error ? error : loom_status_name(status);
    loom_free_string(error);
    throw Error(status, message);
  }

  struct Free {
    void operator()(loom_translator *t) const { loom_translator_free(t); }
  };
  std::unique_ptr<loom_translator, Free> handle;
};

} // namespace loom::api

#endif // LOOM_LOOM_HPP
