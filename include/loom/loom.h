/*===- loom.h - Loom's embeddable translator: the C API ------------------===*\
 *
 * A translator folder (what `loom export` writes, or a `loom train` run
 * directory with its translate.loomx) becomes a translator object that turns
 * UTF-8 sentences into n-best translations with scores. No compiler is
 * involved: the folder holds code compiled ahead of time for this CPU class.
 *
 *   loom_translator *t = NULL;
 *   char *error = NULL;
 *   if (loom_translator_create("model", NULL, &t, &error) != LOOM_OK) {
 *     fprintf(stderr, "%s\n", error);
 *     loom_free_string(error);
 *   }
 *   const char *in[] = {"A dog runs.", "Two men talk."};
 *   loom_result *r = NULL;
 *   if (loom_translate(t, in, 2, NULL, &r, &error) == LOOM_OK) {
 *     puts(loom_result_text(r, 0, 0));
 *     loom_result_free(r);
 *   }
 *   loom_translator_free(t);
 *
 * Errors: every call that can fail returns a loom_status; on failure, when
 * `error` is not NULL, *error is a message naming what is wrong (a file, an
 * option, a sentence), to be freed with loom_free_string. Nothing aborts the
 * process and nothing is thrown across this interface.
 *
 * Threads: a translator may be used from several threads at once; its
 * loom_translate calls then run one at a time, each on all the threads the
 * translator was created with. Separate translators run independently.
 * Results belong to the caller and outlive the translator.
 *
\*===----------------------------------------------------------------------===*/

#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stddef.h>

#if defined(__GNUC__)
#define LOOM_API __attribute__((visibility("default")))
#else
#define LOOM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The same values as the runtime's loom::ErrorCode. */
typedef enum loom_status {
  LOOM_OK = 0,
  LOOM_ERROR_INVALID_ARGUMENT = 1, /* options, sentences */
  LOOM_ERROR_NOT_FOUND = 2,        /* a file of the folder */
  LOOM_ERROR_IO = 3,               /* a file cannot be read */
  LOOM_ERROR_CORRUPT = 4,          /* a file is damaged or of another kind */
  LOOM_ERROR_UNSUPPORTED = 5,      /* e.g. compiled for a CPU this is not */
  LOOM_ERROR_OUT_OF_MEMORY = 6,
  LOOM_ERROR_INTERNAL = 7
} loom_status;

typedef struct loom_translator loom_translator;
typedef struct loom_result loom_result;
typedef struct loom_scores loom_scores;

typedef struct loom_translator_options {
  int threads;            /* 0: one per hardware thread; at most 1024 */
  const char *executable; /* NULL: <folder>/translate.loomx */
  const char *weights;    /* NULL: <folder>/model.safetensors */
} loom_translator_options;

typedef struct loom_translation_options {
  int beam;             /* 1: greedy */
  double alpha;         /* length penalty ((5 + len) / 6)^alpha */
  double max_len_ratio; /* longest output per source token */
  int nbest;            /* translations per sentence, 1 <= nbest <= beam */
  int batch;            /* sentences decoded together, at most */
  int batch_tokens;     /* > 0: batches of at most this many source tokens,
                           padding included, in place of `batch` sentences */
  int split_long;       /* nonzero: a sentence longer than the model takes is
                           translated in parts, joined; zero: an error */
  int min_length;       /* output tokens at least (eos not counted) */
  int max_length;       /* > 0: output tokens at most, besides the ratio */
  double repetition_penalty;    /* > 1: held tokens less likely; 1: none */
  int no_repeat_ngram_size;     /* > 0: no n-gram of this size twice */
  const char *const *forbidden; /* words or phrases never in a translation */
  size_t forbidden_count;
  const char *const *target_prefixes; /* NULL, or per sentence the words its
                                         translation starts with ("": none) */
  int length_penalty_power; /* nonzero: scores over len^alpha (CTranslate2's
                               length_penalty), not ((5 + len) / 6)^alpha */
  int sampling_topk;        /* 1: search; else draw from the k likeliest
                               (0: all), with beam 1 */
  double sampling_topp;     /* in (0, 1]: draw from the nucleus */
  double sampling_temperature;
  unsigned long long seed; /* with a sentence's tokens, fixes its draws */
  int alignments;          /* nonzero: loom_result_alignment gives them */
  int alignment_layer;     /* the decoder layer that aligns: from 0, or -1
                              for the last */
} loom_translation_options;

/* The defaults: all threads, the folder's files; beam 4, alpha 0.6, ratio
 * 1.5, nbest 1, batch 32, batch_tokens 0, split_long 0, lengths 0 (none),
 * repetition_penalty 1, no_repeat_ngram_size 0, no forbidden phrases, no
 * prefixes, no alignments (from the last layer when asked). (The fields from
 * batch_tokens on came with 0.6, whose libloom.so.0.6 a program built against
 * 0.5's header must not load.) */
LOOM_API void loom_translator_options_init(loom_translator_options *options);
LOOM_API void loom_translation_options_init(loom_translation_options *options);

/* Opens the translator folder `folder`; `options` may be NULL. */
LOOM_API loom_status loom_translator_create(
    const char *folder, const loom_translator_options *options,
    loom_translator **translator, char **error);
LOOM_API void loom_translator_free(loom_translator *translator);

/* Translates `count` NUL-terminated UTF-8 sentences; `options` may be NULL.
 * A blank sentence translates to empty text. */
LOOM_API loom_status loom_translate(loom_translator *translator,
                                    const char *const *sentences, size_t count,
                                    const loom_translation_options *options,
                                    loom_result **result, char **error);

/* The sentences of a result, and per sentence its translations, best first. */
LOOM_API size_t loom_result_count(const loom_result *result);
LOOM_API size_t loom_result_nbest(const loom_result *result, size_t sentence);
/* NULL when `sentence` or `rank` is out of range. */
LOOM_API const char *loom_result_text(const loom_result *result,
                                      size_t sentence, size_t rank);
/* The length-normalized score and the sum of the tokens' log-probabilities;
 * 0 when out of range. */
LOOM_API double loom_result_score(const loom_result *result, size_t sentence,
                                  size_t rank);
LOOM_API double loom_result_log_prob(const loom_result *result, size_t sentence,
                                     size_t rank);
/* With `alignments`: how many (source piece, target piece) pairs a
 * translation has, and pair `pair` of them (in target order; each target
 * piece with the source piece its step attended to most; the pieces are the
 * vocabulary's, from 0). loom_result_alignment returns 0 and leaves the
 * outputs alone when out of range, else 1. */
LOOM_API size_t loom_result_alignment_count(const loom_result *result,
                                            size_t sentence, size_t rank);
LOOM_API int loom_result_alignment(const loom_result *result, size_t sentence,
                                   size_t rank, size_t pair, int *source_piece,
                                   int *target_piece);
LOOM_API void loom_result_free(loom_result *result);

/* Scoring given translations (forced decoding): per pair, the
 * log-probability of each target token and of eos after them. */
typedef struct loom_scoring_options {
  double alpha;             /* loom_scores_score's length penalty */
  int length_penalty_power; /* nonzero: len^alpha, else ((5 + len) / 6)^alpha */
  int batch;                /* pairs scored together, at most */
  int batch_tokens;         /* > 0: at most this many source tokens a batch */
} loom_scoring_options;

/* The defaults: alpha 0.6, ((5 + len) / 6)^alpha, batch 32, batch_tokens 0.
 */
LOOM_API void loom_scoring_options_init(loom_scoring_options *options);

/* Scores `targets[i]` as the translation of `sources[i]`, for `count` pairs
 * of NUL-terminated UTF-8 sentences; `options` may be NULL. A translation
 * loom_translate returned scores what it reported (same alpha, no
 * repetition penalty). A blank target is eos alone. */
LOOM_API loom_status loom_score_pairs(loom_translator *translator,
                                      const char *const *sources,
                                      const char *const *targets, size_t count,
                                      const loom_scoring_options *options,
                                      loom_scores **scores, char **error);

LOOM_API size_t loom_scores_count(const loom_scores *scores);
/* The sum of the pair's token log-probabilities, eos included, and that sum
 * over the length penalty; 0 when `pair` is out of range. */
LOOM_API double loom_scores_log_prob(const loom_scores *scores, size_t pair);
LOOM_API double loom_scores_score(const loom_scores *scores, size_t pair);
/* The pair's target tokens, eos last ("</s>"): how many, each piece and its
 * log-probability (NULL and 0 when out of range). */
LOOM_API size_t loom_scores_tokens(const loom_scores *scores, size_t pair);
LOOM_API const char *loom_scores_token(const loom_scores *scores, size_t pair,
                                       size_t token);
LOOM_API double loom_scores_token_log_prob(const loom_scores *scores,
                                           size_t pair, size_t token);
LOOM_API void loom_scores_free(loom_scores *scores);

LOOM_API void loom_free_string(char *string);
/* "invalid argument", "not found", ... */
LOOM_API const char *loom_status_name(loom_status status);
/* The Loom release, "0.5.0". */
LOOM_API const char *loom_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_LOOM_H */
