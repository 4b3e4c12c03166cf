//===- TranslateFlags.h - The options both translators take -----*- C++ -*-===//
//
// `loom translate` and `loom-translate` print the same output for the same
// options, so they declare those options once, here.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_TRANSLATEFLAGS_H
#define LOOM_TOOLS_TRANSLATEFLAGS_H

#include "api/TranslateStream.h"
#include "api/Translator.h"

#include "CLI/CLI.hpp"

#include <string>

namespace loom {

/// Adds --input, --weights, --beam, --alpha, --max-len-ratio, --nbest,
/// --batch, --batch-tokens, --split-long, --threads, --workers and --device
/// to `cmd`.
inline void addTranslateFlags(CLI::App *cmd, TranslateStreamOptions &input,
                              TranslatorOptions &opening,
                              TranslationOptions &options) {
  cmd->add_option("--input", input.path,
                  "Sentences, one per line (default: stdin)");
  cmd->add_option("--target-prefix", input.targetPrefixPath,
                  "A file of one line per sentence: the words its "
                  "translation starts with (an empty line: none)");
  cmd->add_flag("--with-scores", input.withScores,
                "Print each translation after its score (the "
                "log-probability over the length penalty) and a tab");
  cmd->add_flag("--with-alignments", input.withAlignments,
                "Print after each translation a tab and its alignment: "
                "source piece - target piece pairs from 0 (\"0-0 2-1\"), "
                "each target piece with the source piece its step attended "
                "to most");
  cmd->add_option("--alignment-layer", options.alignmentLayer,
                  "The decoder layer whose cross-attention (averaged over "
                  "its heads) aligns: from 0, or -1 for the last")
      ->capture_default_str();
  cmd->add_option("--weights", opening.weights,
                  "Parameters to use instead of the model's "
                  "model.safetensors");
  cmd->add_option("--beam", options.beam, "Beam size (1: greedy)")
      ->capture_default_str();
  cmd->add_option("--alpha", options.alpha,
                  "Length penalty ((5 + len) / 6)^alpha")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--length-penalty-form",
         [&options](const std::string &form) {
           options.powerLengthPenalty = form == "power";
         },
         "gnmt: scores are log-probabilities over ((5 + len) / 6)^alpha; "
         "power: over len^alpha (CTranslate2's length_penalty; at --alpha 1, "
         "the mean per token)")
      ->check(CLI::IsMember({"gnmt", "power"}));
  cmd->add_option("--max-len-ratio", options.maxLenRatio,
                  "Longest output, as a multiple of the source's length")
      ->capture_default_str();
  cmd->add_option("--nbest", options.nbest, "Translations printed per sentence")
      ->capture_default_str();
  cmd->add_option("--batch", options.batch, "Sentences decoded together")
      ->capture_default_str();
  cmd->add_option("--batch-tokens", options.batchTokens,
                  "Batches of at most this many source tokens, padding "
                  "included, in place of --batch sentences (0: by "
                  "sentences)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--split-long", options.splitLong,
                "Translate a sentence longer than the model takes in parts "
                "cut at clause boundaries, joined (without it, such a "
                "sentence is an error)");
  cmd->add_option("--min-length", options.minLength,
                  "Output tokens at least (eos not counted)")
      ->capture_default_str();
  cmd->add_option("--max-length", options.maxLength,
                  "Output tokens at most, besides --max-len-ratio (0: the "
                  "ratio alone)")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", options.repetitionPenalty,
                  "Above 1, tokens a translation already holds become less "
                  "likely (their logits divided by it where positive, "
                  "multiplied where negative); 1: none")
      ->capture_default_str();
  cmd->add_option("--no-repeat-ngram-size", options.noRepeatNgram,
                  "No n-gram of this many tokens twice in a translation (0: "
                  "no limit)")
      ->capture_default_str();
  cmd->add_option("--sampling-topk", options.samplingTopK,
                  "1: search; otherwise draw each token from the K likeliest "
                  "(0: all), with --beam 1")
      ->capture_default_str();
  cmd->add_option("--sampling-topp", options.samplingTopP,
                  "When sampling, draw from the fewest likeliest tokens whose "
                  "probabilities reach P, in (0, 1]")
      ->capture_default_str();
  cmd->add_option("--sampling-temperature", options.samplingTemperature,
                  "When sampling, the temperature (above 0)")
      ->capture_default_str();
  cmd->add_option("--seed", options.seed,
                  "When sampling, the seed: with the sentence's own tokens it "
                  "fixes the draws, whatever the batch")
      ->capture_default_str();
  cmd->add_option("--forbid", options.forbidden,
                  "A word or phrase no translation may contain (repeatable)");
  cmd->add_option("--threads", opening.threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--workers", opening.workers,
                  "Decoders translating batches side by side on the CPU, "
                  "the threads split between them (each holds a copy of the "
                  "weights): for a small model, whose kernels are too small "
                  "for several threads each")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--device", opening.device,
                  "Where to translate: cpu, or cuda (cuda:N for GPU N); by "
                  "default the device the compiled decoder is for");
}

/// Adds --time-runs: after the translation, the same input `runs` more
/// times, timed, reported as one JSON line on stderr (bench/ reads it).
inline void addTimeRunsFlag(CLI::App *cmd, int &runs) {
  cmd->add_option("--time-runs", runs,
                  "After printing the translations, translate the same "
                  "input this many more times and print their seconds as "
                  "one JSON line on stderr")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
}

} // namespace loom

#endif // LOOM_TOOLS_TRANSLATEFLAGS_H
