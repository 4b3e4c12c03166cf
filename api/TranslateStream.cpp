//===- TranslateStream.cpp - Lines in, translations out -------------------===//

#include "api/TranslateStream.h"

#include "text/Bleu.h"
#include "text/LineReader.h"

#include "nlohmann/json.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace loom {

ErrorOr<std::vector<std::string>> readInputLines(const std::string &path) {
  std::ifstream file;
  if (!path.empty()) {
    // A directory opens, then throws from inside the stream on reading.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return Status::failure("'" + path + "' is a directory, not a file",
                             ErrorCode::InvalidArgument);
    file.open(path, std::ios::binary);
    if (!file)
      return Status::failure("cannot open '" + path +
                                 "': " + std::strerror(errno),
                             ErrorCode::NotFound);
  }
  std::istream &in = path.empty() ? std::cin : file;
  std::vector<std::string> lines;
  std::string line;
  text::LineReader reader(in);
  std::string name = path.empty() ? "<stdin>" : path;
  while (reader.next(line)) {
    std::string where = name + ":" + std::to_string(reader.lineNumber());
    if (reader.tooLong())
      return Status::failure(where + ": line longer than " +
                             std::to_string(text::kMaxLineBytes) +
                             " bytes; not a sentence");
    if (!text::isValidUtf8(line))
      return Status::failure(where + ": invalid UTF-8");
    lines.push_back(line);
  }
  if (in.bad())
    return Status::failure("cannot read '" + (path.empty() ? "<stdin>" : path) +
                               "'",
                           ErrorCode::Io);
  return lines;
}

namespace {

/// Tokens of `text` as `tokenizer` splits it; 0 for text it cannot split
/// (the translator produced the text from its own vocabulary, so none).
int64_t tokenCount(const text::Tokenizer &tokenizer, const std::string &text) {
  if (text.empty())
    return 0;
  ErrorOr<std::vector<int32_t>> ids = tokenizer.encode(text);
  return ids ? int64_t(ids->size()) : 0;
}

} // namespace

Status translateStream(Translator &translator,
                       const TranslationOptions &options,
                       const TranslateStreamOptions &input, std::FILE *out,
                       const std::function<void(const std::string &)> &warn,
                       int timeRuns, TranslationTimes *times) {
  ErrorOr<std::vector<std::string>> lines = readInputLines(input.path);
  if (!lines)
    return lines.status();
  std::vector<std::string> prefixes;
  if (!input.targetPrefixPath.empty()) {
    if (input.path.empty() && input.targetPrefixPath == "-")
      return Status::failure("the sentences and their target prefixes cannot "
                             "both come from stdin",
                             ErrorCode::InvalidArgument);
    ErrorOr<std::vector<std::string>> read =
        readInputLines(input.targetPrefixPath);
    if (!read)
      return read.status();
    if (read->size() != lines->size())
      return Status::failure("'" + input.targetPrefixPath + "' has " +
                                 std::to_string(read->size()) +
                                 " target prefixes for " +
                                 std::to_string(lines->size()) +
                                 " sentences: give one line per sentence "
                                 "(an empty one for none)",
                             ErrorCode::InvalidArgument);
    prefixes = std::move(*read);
  }
  // Where only the text is written, the scores need not be computed.
  TranslationOptions asked = options;
  asked.scores = input.withScores;
  asked.alignments = options.alignments || input.withAlignments;
  auto translated =
      translator.translate(*lines, prefixes, asked, warn, input.beforeBatch);
  if (!translated)
    return translated.status();
  for (const std::vector<Translation> &nbest : *translated)
    for (const Translation &t : nbest) {
      // Enough digits to tell any two doubles apart.
      if (input.withScores)
        std::fprintf(out, "%.17g\t", t.score);
      std::fputs(t.text.c_str(), out);
      if (input.withAlignments) {
        std::fputc('\t', out);
        for (size_t a = 0; a < t.alignment.size(); ++a)
          std::fprintf(out, "%s%d-%d", a ? " " : "", t.alignment[a].first,
                       t.alignment[a].second);
      }
      std::fputc('\n', out);
    }
  if (std::fflush(out) != 0)
    return Status::failure(std::string("cannot write the translations: ") +
                               std::strerror(errno),
                           ErrorCode::Io);
  if (timeRuns <= 0 || !times)
    return Status::success();

  *times = TranslationTimes{};
  const text::Tokenizer &vocabulary = translator.vocabulary();
  for (size_t i = 0; i < lines->size(); ++i) {
    if (text::splitWhitespace((*lines)[i]).empty())
      continue;
    ++times->sentences;
    times->sourceTokens += tokenCount(vocabulary, (*lines)[i]);
    times->targetTokens += tokenCount(vocabulary, (*translated)[i][0].text);
  }
  // The same calls again: the first one above paid for whatever a
  // translator does once (packing weights, growing its buffers).
  for (int run = 0; run < timeRuns; ++run) {
    auto start = std::chrono::steady_clock::now();
    auto again = translator.translate(*lines, prefixes, asked);
    if (!again)
      return again.status();
    times->seconds.push_back(std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count());
  }
  return Status::success();
}

std::string translationTimesJson(const TranslationTimes &times,
                                 const std::string &system,
                                 const TranslatorOptions &opening,
                                 const TranslationOptions &options,
                                 const std::string &precision) {
  nlohmann::json record;
  record["system"] = system;
  record["beam"] = options.beam;
  record["alpha"] = options.alpha;
  record["batch"] = options.batch;
  record["max_len_ratio"] = options.maxLenRatio;
  record["threads"] = opening.threads;
  record["workers"] = opening.workers;
  record["device"] = opening.device.empty() ? "default" : opening.device;
  if (!precision.empty())
    record["precision"] = precision;
  std::vector<double> sorted = times.seconds;
  std::sort(sorted.begin(), sorted.end());
  double median = 0;
  if (!sorted.empty())
    median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                               : (sorted[sorted.size() / 2 - 1] +
                                  sorted[sorted.size() / 2]) /
                                     2;
  record["sentences"] = times.sentences;
  record["source_tokens"] = times.sourceTokens;
  record["target_tokens"] = times.targetTokens;
  record["seconds"] = times.seconds;
  record["seconds_median"] = median;
  if (median > 0 && times.sentences > 0) {
    record["target_tokens_per_s"] = double(times.targetTokens) / median;
    record["sentences_per_s"] = double(times.sentences) / median;
    record["ms_per_sentence"] = 1000 * median / double(times.sentences);
  }
  return record.dump();
}

} // namespace loom
