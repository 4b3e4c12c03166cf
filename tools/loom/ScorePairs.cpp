//===- ScorePairs.cpp - `loom score-pairs` --------------------------------===//
//
// The log-probability a model directory gives each given translation of a
// source, by forced decoding (Translator::scorePairs):
//
//   loom score-pairs --model DIR --source SRC --target TGT
//       [--normalize [--alpha A] [--length-penalty-form gnmt|power]]
//       [--token-scores] [--json]
//
// prints one line per pair: the sum of the log-probabilities of the
// target's tokens and eos (with --normalize, that sum over the length
// penalty: the score `loom translate --with-scores` prints for its own
// translations), then with --token-scores a tab and each token's
// log-probability; with --json, one object per pair with all of it and the
// pieces. Every pair is scored before anything is printed, so a refusal
// leaves stdout empty.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"

#include "api/TranslateStream.h"

#include "nlohmann/json.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace loom::cli {

namespace {

struct ScorePairsOptions {
  std::string model, source, target;
  TranslatorOptions opening;
  ScoreOptions scoring;
  std::string precision = "fp32";
  bool normalize = false, tokenScores = false, json = false;
};

llvm::Error scorePairs(const ScorePairsOptions &o) {
  auto sources = readInputLines(o.source);
  if (!sources)
    return toError(sources.status());
  auto targets = readInputLines(o.target);
  if (!targets)
    return toError(targets.status());
  if (sources->size() != targets->size())
    return toError(Status::failure(
        "'" + o.source + "' has " + std::to_string(sources->size()) +
            " lines and '" + o.target + "' has " +
            std::to_string(targets->size()) + ": they pair up line by line",
        ErrorCode::InvalidArgument));
  auto translator =
      openModelTranslator(o.model, o.opening, o.precision, "loom score-pairs");
  if (!translator)
    return translator.takeError();
  auto scores = (*translator)->scorePairs(*sources, *targets, o.scoring);
  if (!scores)
    return toError(scores.status());
  for (const PairScore &s : *scores) {
    double value = o.normalize ? s.score : s.logProb;
    if (o.json) {
      nlohmann::json record;
      record["log_prob"] = s.logProb;
      record["score"] = s.score;
      record["tokens"] = s.tokens;
      record["token_log_probs"] = s.tokenLogProbs;
      std::fprintf(stdout, "%s\n", record.dump().c_str());
      continue;
    }
    // Enough digits to tell any two doubles apart, as --with-scores prints.
    std::fprintf(stdout, "%.17g", value);
    if (o.tokenScores) {
      const char *separator = "\t";
      for (float lp : s.tokenLogProbs) {
        std::fprintf(stdout, "%s%.9g", separator, double(lp));
        separator = " ";
      }
    }
    std::fputc('\n', stdout);
  }
  if (std::fflush(stdout) != 0)
    return toError(Status::failure(std::string("cannot write the scores: ") +
                                       std::strerror(errno),
                                   ErrorCode::Io));
  return llvm::Error::success();
}

} // namespace

void addScorePairsCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<ScorePairsOptions>();
  CLI::App *cmd = app.add_subcommand(
      "score-pairs",
      "Print the log-probability a model directory gives each line of "
      "--target as the translation of the same line of --source");
  cmd->add_option("--model", o->model, "The model directory")->required();
  cmd->add_option("--source", o->source, "Source sentences, one per line")
      ->required();
  cmd->add_option("--target", o->target,
                  "Their translations, one per line of --source")
      ->required();
  cmd->add_option("--weights", o->opening.weights,
                  "Parameters to use instead of the model's "
                  "model.safetensors");
  cmd->add_flag("--normalize", o->normalize,
                "Print the log-probability over the length penalty (the "
                "score translating reports) instead of the sum");
  cmd->add_option("--alpha", o->scoring.alpha,
                  "Length penalty ((5 + len) / 6)^alpha, eos counted")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--length-penalty-form",
         [o](const std::string &form) {
           o->scoring.powerLengthPenalty = form == "power";
         },
         "gnmt: ((5 + len) / 6)^alpha; power: len^alpha")
      ->check(CLI::IsMember({"gnmt", "power"}));
  cmd->add_flag("--token-scores", o->tokenScores,
                "After the score, a tab and each token's log-probability, "
                "eos last");
  cmd->add_flag("--json", o->json,
                "One JSON object per pair: log_prob, score, tokens and "
                "token_log_probs");
  cmd->add_option("--batch", o->scoring.batch, "Pairs scored together")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--batch-tokens", o->scoring.batchTokens,
                  "Batches of at most this many source tokens, padding "
                  "included, in place of --batch pairs (0: by pairs)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--threads", o->opening.threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--workers", o->opening.workers,
                  "Decoders scoring batches side by side on the CPU")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--device", o->opening.device,
                  "cpu, or cuda (cuda:N for GPU N); by default the device "
                  "the compiled decoder is for");
  addPrecisionOption(cmd, o->precision);
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = scorePairs(*o))
      exitCode = fail("score-pairs", std::move(err));
  });
}

} // namespace loom::cli
