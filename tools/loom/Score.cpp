//===- Score.cpp - `loom score` -------------------------------------------===//
//
// Corpus BLEU of hypotheses (stdin or --input) against one reference file,
// line by line, computed as sacreBLEU computes it (text/Bleu.h):
//
//   loom score --ref REF [--lowercase] [--tokenize 13a|none] [--json] < HYP
//
// prints sacreBLEU's score line and then the signature, or one JSON line.
// Everything is read and checked before anything is printed, so a refusal
// leaves stdout empty.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"

#include "text/Bleu.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdio>
#include <memory>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct ScoreOptions {
  std::string ref;
  std::string input; // empty: stdin
  bool lowercase = false;
  std::string tokenize = "13a";
  bool json = false;
};

/// The lines of a file (or stdin when `path` is empty), each checked to be
/// UTF-8. Only '\n' ends a line, as in sacreBLEU's file reading; a final
/// '\n' ends the last line rather than starting an empty one. `what` names
/// the file in messages.
llvm::Expected<std::vector<std::string>> readLines(const std::string &path,
                                                   llvm::StringRef what) {
  std::string name = path.empty() ? "<stdin>" : path;
  auto buffer = path.empty() ? llvm::MemoryBuffer::getSTDIN()
                             : llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return error(llvm::formatv("cannot read {0} '{1}': {2}", what, name,
                               buffer.getError().message()));
  llvm::StringRef text = (*buffer)->getBuffer();
  std::vector<std::string> lines;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    size_t bad = 0;
    if (!text::isValidUtf8(line, &bad))
      return error(llvm::formatv(
          "{0} '{1}' line {2} is not valid UTF-8 (at byte {4}: 0x{3:X-2})",
          what, name, lines.size() + 1,
          unsigned(static_cast<unsigned char>(line[bad])), bad + 1));
    lines.push_back(line.str());
    text = rest;
  }
  return lines;
}

llvm::Error score(const ScoreOptions &options) {
  if (!text::isBleuTokenizer(options.tokenize))
    return error("unknown tokenizer '" + options.tokenize +
                 "'; the tokenizers are '13a' and 'none'");
  auto refs = readLines(options.ref, "reference");
  if (!refs)
    return refs.takeError();
  auto hyps = readLines(options.input, "hypotheses");
  if (!hyps)
    return hyps.takeError();
  if (hyps->size() != refs->size())
    return error(llvm::formatv(
        "the hypotheses have {0} lines but the reference has {1}; they must "
        "pair up line by line",
        hyps->size(), refs->size()));
  if (hyps->empty())
    return error("there is nothing to score: the hypotheses and the "
                 "reference are empty");
  // sacreBLEU refuses an empty reference segment rather than score against
  // it; so does Loom, so that every score it prints is one sacreBLEU prints.
  for (size_t i = 0; i < refs->size(); ++i)
    if (text::rstripUtf8((*refs)[i]).empty())
      return error(llvm::formatv("reference '{0}' line {1} is empty; every "
                                 "hypothesis needs a reference",
                                 options.ref, i + 1));

  text::BleuOptions bleuOptions;
  bleuOptions.lowercase = options.lowercase;
  bleuOptions.tokenize = options.tokenize;
  text::BleuScore result = text::corpusBleu(*hyps, *refs, bleuOptions);
  std::string signature =
      text::bleuSignature(options.lowercase, options.tokenize);

  if (options.json) {
    nlohmann::json line;
    line["score"] = result.score;
    line["precisions"] = std::vector<double>(std::begin(result.precisions),
                                             std::end(result.precisions));
    line["bp"] = result.bp;
    line["ratio"] = result.ratio;
    line["hyp_len"] = result.sysLen;
    line["ref_len"] = result.refLen;
    line["signature"] = signature;
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf("%s\nsignature: %s\n", result.formatted().c_str(),
                signature.c_str());
  }
  return llvm::Error::success();
}

} // namespace

void addScoreCommand(CLI::App &app, int &exitCode) {
  auto options = std::make_shared<ScoreOptions>();
  CLI::App *cmd = app.add_subcommand(
      "score", "Corpus BLEU of hypotheses against a reference, as sacreBLEU "
               "computes it");
  cmd->add_option("--ref", options->ref, "The reference: one segment per line")
      ->required();
  cmd->add_option("--input", options->input,
                  "The hypotheses, paired with the reference by line "
                  "(default: stdin)");
  cmd->add_flag("--lowercase", options->lowercase,
                "Lowercase hypotheses and reference before tokenizing");
  cmd->add_option("--tokenize", options->tokenize,
                  "13a (mteval-v13a, sacreBLEU's default) or none (split "
                  "on whitespace)")
      ->capture_default_str();
  cmd->add_flag("--json", options->json,
                "Print one JSON line instead of the score and signature");
  cmd->callback([options, &exitCode] {
    if (llvm::Error err = score(*options))
      exitCode = fail("score", std::move(err));
  });
}

} // namespace loom::cli
