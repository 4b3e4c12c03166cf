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
#include "text/LineReader.h"

#include "nlohmann/json.hpp"
#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
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
/// the file in messages. Read in chunks with a bound on a line's length
/// (text::kMaxLineBytes), on the whole and on the count of lines
/// (`maxLines`; `tooMany` says what more would mean), so that an endless
/// input (/dev/zero, `yes`) is refused instead of filling memory.
llvm::Expected<std::vector<std::string>>
readLines(const std::string &path, llvm::StringRef what, size_t maxLines,
          llvm::StringRef tooMany) {
  constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;
  std::string name = path.empty() ? "<stdin>" : path;
  std::ifstream file;
  if (!path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return error(llvm::formatv("{0} '{1}' is a directory", what, name));
    file.open(path, std::ios::binary);
    if (!file)
      return error(llvm::formatv("cannot read {0} '{1}': {2}", what, name,
                                 std::strerror(errno)));
  }
  std::istream &in = path.empty() ? std::cin : file;
  std::vector<std::string> lines;
  std::string line;
  uint64_t total = 0;
  char chunk[1 << 16];
  auto finish = [&]() -> llvm::Error {
    size_t bad = 0;
    if (!text::isValidUtf8(line, &bad))
      return error(llvm::formatv(
          "{0} '{1}' line {2} is not valid UTF-8 (at byte {4}: 0x{3:X-2})",
          what, name, lines.size() + 1,
          unsigned(static_cast<unsigned char>(line[bad])), bad + 1));
    if (lines.size() == maxLines)
      return error(llvm::formatv("{0} '{1}' has more than {2} lines{3}", what,
                                 name, maxLines, tooMany));
    lines.push_back(std::move(line));
    line.clear();
    return llvm::Error::success();
  };
  while (in) {
    in.read(chunk, sizeof(chunk));
    std::streamsize got = in.gcount();
    if (got <= 0)
      break;
    total += uint64_t(got);
    if (total > kMaxInputBytes)
      return error(llvm::formatv("{0} '{1}' is longer than {2} GiB",
                                 what, name, kMaxInputBytes >> 30));
    for (llvm::StringRef rest(chunk, size_t(got)); !rest.empty();) {
      auto [piece, after] = rest.split('\n');
      line.append(piece.data(), piece.size());
      if (line.size() > text::kMaxLineBytes)
        return error(llvm::formatv(
            "{0} '{1}' line {2} is longer than {3} bytes", what, name,
            lines.size() + 1, text::kMaxLineBytes));
      if (piece.size() == rest.size())
        break; // no '\n' in the rest of the chunk: the line goes on
      if (llvm::Error e = finish())
        return std::move(e);
      rest = after;
    }
  }
  if (in.bad())
    return error(llvm::formatv("cannot read {0} '{1}'", what, name));
  if (!line.empty())
    if (llvm::Error e = finish())
      return std::move(e);
  return lines;
}

llvm::Error score(const ScoreOptions &options) {
  if (!text::isBleuTokenizer(options.tokenize))
    return error("unknown tokenizer '" + options.tokenize +
                 "'; the tokenizers are '13a' and 'none'");
  // A reference of tens of millions of segments is no test set; the
  // hypotheses are read no further than the reference's count.
  auto refs = readLines(options.ref, "reference", size_t(1) << 24, "");
  if (!refs)
    return refs.takeError();
  auto hyps = readLines(
      options.input, "hypotheses", refs->size(),
      llvm::formatv(", the reference's count; they must pair up line by line",
                    refs->size())
          .str());
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
