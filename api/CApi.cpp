//===- CApi.cpp - include/loom/loom.h over the Translator -----------------===//
//
// The C API is a shell around loom::Translator: it copies options in,
// catches every exception (an allocation failure inside the standard
// library) so that none crosses the C boundary, and copies results out into
// memory the caller frees.
//
//===----------------------------------------------------------------------===//

#include "loom/loom.h"

#include "abi/Version.h"
#include "api/Translator.h"

#include <cstdlib>
#include <cstring>
#include <new>

struct loom_translator {
  std::unique_ptr<loom::Translator> impl;
};

struct loom_result {
  std::vector<std::vector<loom::Translation>> sentences;
};

struct loom_scores {
  std::vector<loom::PairScore> pairs;
};

namespace {

/// A malloc'ed copy of `message` for the caller, when it asked for one.
void report(char **error, const std::string &message) {
  if (!error)
    return;
  *error = static_cast<char *>(std::malloc(message.size() + 1));
  if (*error)
    std::memcpy(*error, message.c_str(), message.size() + 1);
}

loom_status fail(char **error, const loom::Status &status) {
  report(error, status.message());
  return static_cast<loom_status>(status.code());
}

loom_status failWith(char **error, loom_status code,
                     const std::string &message) {
  report(error, message);
  return code;
}

const loom::Translation *at(const loom_result *result, size_t sentence,
                            size_t rank) {
  if (!result || sentence >= result->sentences.size() ||
      rank >= result->sentences[sentence].size())
    return nullptr;
  return &result->sentences[sentence][rank];
}

const loom::PairScore *at(const loom_scores *scores, size_t pair) {
  if (!scores || pair >= scores->pairs.size())
    return nullptr;
  return &scores->pairs[pair];
}

} // namespace

extern "C" {

void loom_translator_options_init(loom_translator_options *options) {
  if (!options)
    return;
  options->threads = 0;
  options->executable = nullptr;
  options->weights = nullptr;
}

void loom_translation_options_init(loom_translation_options *options) {
  if (!options)
    return;
  loom::TranslationOptions defaults;
  options->beam = static_cast<int>(defaults.beam);
  options->alpha = defaults.alpha;
  options->max_len_ratio = defaults.maxLenRatio;
  options->nbest = static_cast<int>(defaults.nbest);
  options->batch = static_cast<int>(defaults.batch);
  options->batch_tokens = static_cast<int>(defaults.batchTokens);
  options->split_long = defaults.splitLong ? 1 : 0;
  options->min_length = static_cast<int>(defaults.minLength);
  options->max_length = static_cast<int>(defaults.maxLength);
  options->repetition_penalty = defaults.repetitionPenalty;
  options->no_repeat_ngram_size = static_cast<int>(defaults.noRepeatNgram);
  options->forbidden = nullptr;
  options->forbidden_count = 0;
  options->target_prefixes = nullptr;
  options->length_penalty_power = defaults.powerLengthPenalty ? 1 : 0;
  options->sampling_topk = static_cast<int>(defaults.samplingTopK);
  options->sampling_topp = defaults.samplingTopP;
  options->sampling_temperature = defaults.samplingTemperature;
  options->seed = defaults.seed;
  options->alignments = defaults.alignments ? 1 : 0;
  options->alignment_layer = static_cast<int>(defaults.alignmentLayer);
}

loom_status loom_translator_create(const char *folder,
                                   const loom_translator_options *options,
                                   loom_translator **translator, char **error) {
  if (error)
    *error = nullptr;
  if (!folder || !translator)
    return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                    "loom_translator_create needs a folder and a place for "
                    "the translator");
  *translator = nullptr;
  try {
    loom::TranslatorOptions o;
    if (options) {
      o.threads = options->threads;
      o.executable = options->executable ? options->executable : "";
      o.weights = options->weights ? options->weights : "";
    }
    loom::ErrorOr<std::unique_ptr<loom::Translator>> opened =
        loom::Translator::open(folder, o);
    if (!opened)
      return fail(error, opened.status());
    *translator = new loom_translator{std::move(*opened)};
    return LOOM_OK;
  } catch (const std::bad_alloc &) {
    return failWith(error, LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return failWith(error, LOOM_ERROR_INTERNAL, e.what());
  }
}

void loom_translator_free(loom_translator *translator) { delete translator; }

loom_status loom_translate(loom_translator *translator,
                           const char *const *sentences, size_t count,
                           const loom_translation_options *options,
                           loom_result **result, char **error) {
  if (error)
    *error = nullptr;
  if (!translator || !result || (count && !sentences))
    return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                    "loom_translate needs a translator, sentences and a "
                    "place for the result");
  *result = nullptr;
  try {
    loom::TranslationOptions o;
    if (options) {
      o.beam = options->beam;
      o.alpha = options->alpha;
      o.maxLenRatio = options->max_len_ratio;
      o.nbest = options->nbest;
      o.batch = options->batch;
      o.batchTokens = options->batch_tokens;
      o.splitLong = options->split_long != 0;
      o.minLength = options->min_length;
      o.maxLength = options->max_length;
      o.repetitionPenalty = options->repetition_penalty;
      o.noRepeatNgram = options->no_repeat_ngram_size;
      o.powerLengthPenalty = options->length_penalty_power != 0;
      o.samplingTopK = options->sampling_topk;
      o.samplingTopP = options->sampling_topp;
      o.samplingTemperature = options->sampling_temperature;
      o.seed = options->seed;
      o.alignments = options->alignments != 0;
      o.alignmentLayer = options->alignment_layer;
      if (options->forbidden_count > 0 && !options->forbidden)
        return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                        "forbidden_count is " +
                            std::to_string(options->forbidden_count) +
                            " but forbidden is NULL");
      for (size_t i = 0; i < options->forbidden_count; ++i) {
        if (!options->forbidden[i])
          return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                          "forbidden[" + std::to_string(i) + "] is NULL");
        o.forbidden.push_back(options->forbidden[i]);
      }
    }
    std::vector<std::string> input;
    input.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!sentences[i])
        return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                        "a sentence pointer is NULL");
      input.emplace_back(sentences[i]);
    }
    std::vector<std::string> prefixes;
    if (options && options->target_prefixes)
      for (size_t i = 0; i < count; ++i) {
        if (!options->target_prefixes[i])
          return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                          "target_prefixes[" + std::to_string(i) +
                              "] is NULL (\"\" for no prefix)");
        prefixes.emplace_back(options->target_prefixes[i]);
      }
    auto translated = translator->impl->translate(input, prefixes, o);
    if (!translated)
      return fail(error, translated.status());
    *result = new loom_result{std::move(*translated)};
    return LOOM_OK;
  } catch (const std::bad_alloc &) {
    return failWith(error, LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return failWith(error, LOOM_ERROR_INTERNAL, e.what());
  }
}

size_t loom_result_count(const loom_result *result) {
  return result ? result->sentences.size() : 0;
}

size_t loom_result_nbest(const loom_result *result, size_t sentence) {
  if (!result || sentence >= result->sentences.size())
    return 0;
  return result->sentences[sentence].size();
}

const char *loom_result_text(const loom_result *result, size_t sentence,
                             size_t rank) {
  const loom::Translation *t = at(result, sentence, rank);
  return t ? t->text.c_str() : nullptr;
}

double loom_result_score(const loom_result *result, size_t sentence,
                         size_t rank) {
  const loom::Translation *t = at(result, sentence, rank);
  return t ? t->score : 0;
}

double loom_result_log_prob(const loom_result *result, size_t sentence,
                            size_t rank) {
  const loom::Translation *t = at(result, sentence, rank);
  return t ? t->logProb : 0;
}

size_t loom_result_alignment_count(const loom_result *result, size_t sentence,
                                   size_t rank) {
  const loom::Translation *t = at(result, sentence, rank);
  return t ? t->alignment.size() : 0;
}

int loom_result_alignment(const loom_result *result, size_t sentence,
                          size_t rank, size_t pair, int *source_piece,
                          int *target_piece) {
  const loom::Translation *t = at(result, sentence, rank);
  if (!t || pair >= t->alignment.size())
    return 0;
  if (source_piece)
    *source_piece = t->alignment[pair].first;
  if (target_piece)
    *target_piece = t->alignment[pair].second;
  return 1;
}

void loom_result_free(loom_result *result) { delete result; }

void loom_scoring_options_init(loom_scoring_options *options) {
  if (!options)
    return;
  loom::ScoreOptions defaults;
  options->alpha = defaults.alpha;
  options->length_penalty_power = defaults.powerLengthPenalty ? 1 : 0;
  options->batch = static_cast<int>(defaults.batch);
  options->batch_tokens = static_cast<int>(defaults.batchTokens);
}

loom_status loom_score_pairs(loom_translator *translator,
                             const char *const *sources,
                             const char *const *targets, size_t count,
                             const loom_scoring_options *options,
                             loom_scores **scores, char **error) {
  if (error)
    *error = nullptr;
  if (!translator || !scores || (count && (!sources || !targets)))
    return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                    "loom_score_pairs needs a translator, sources, targets "
                    "and a place for the scores");
  *scores = nullptr;
  try {
    loom::ScoreOptions o;
    if (options) {
      o.alpha = options->alpha;
      o.powerLengthPenalty = options->length_penalty_power != 0;
      o.batch = options->batch;
      o.batchTokens = options->batch_tokens;
    }
    std::vector<std::string> src, tgt;
    src.reserve(count);
    tgt.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!sources[i] || !targets[i])
        return failWith(error, LOOM_ERROR_INVALID_ARGUMENT,
                        "the source or target of pair " +
                            std::to_string(i + 1) + " is NULL");
      src.emplace_back(sources[i]);
      tgt.emplace_back(targets[i]);
    }
    auto scored = translator->impl->scorePairs(src, tgt, o);
    if (!scored)
      return fail(error, scored.status());
    *scores = new loom_scores{std::move(*scored)};
    return LOOM_OK;
  } catch (const std::bad_alloc &) {
    return failWith(error, LOOM_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &e) {
    return failWith(error, LOOM_ERROR_INTERNAL, e.what());
  }
}

size_t loom_scores_count(const loom_scores *scores) {
  return scores ? scores->pairs.size() : 0;
}

double loom_scores_log_prob(const loom_scores *scores, size_t pair) {
  const loom::PairScore *p = at(scores, pair);
  return p ? p->logProb : 0;
}

double loom_scores_score(const loom_scores *scores, size_t pair) {
  const loom::PairScore *p = at(scores, pair);
  return p ? p->score : 0;
}

size_t loom_scores_tokens(const loom_scores *scores, size_t pair) {
  const loom::PairScore *p = at(scores, pair);
  return p ? p->tokens.size() : 0;
}

const char *loom_scores_token(const loom_scores *scores, size_t pair,
                              size_t token) {
  const loom::PairScore *p = at(scores, pair);
  return p && token < p->tokens.size() ? p->tokens[token].c_str() : nullptr;
}

double loom_scores_token_log_prob(const loom_scores *scores, size_t pair,
                                  size_t token) {
  const loom::PairScore *p = at(scores, pair);
  return p && token < p->tokenLogProbs.size() ? p->tokenLogProbs[token] : 0;
}

void loom_scores_free(loom_scores *scores) { delete scores; }

void loom_free_string(char *string) { std::free(string); }

const char *loom_status_name(loom_status status) {
  return loom::errorCodeName(static_cast<loom::ErrorCode>(status));
}

const char *loom_version(void) { return loom::kLoomVersion; }

} // extern "C"
