//===- Corpus.cpp - Reading parallel corpora ------------------------------===//

#include "text/Corpus.h"

#include "text/LineReader.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace loom::text {
namespace {

bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/// ASCII whitespace only: SentencePiece's normalizer deals with the rest, and
/// a line of only non-breaking spaces is rare enough to pass through.
bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
         c == '\f';
}

std::string trim(const std::string &s) {
  size_t begin = 0, end = s.size();
  while (begin < end && isSpace(s[begin]))
    ++begin;
  while (end > begin && isSpace(s[end - 1]))
    --end;
  return s.substr(begin, end - begin);
}

} // namespace

size_t findInvalidUtf8(const std::string &text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The lead byte fixes the length and the range of the second byte;
    // the ranges exclude overlong forms (C0, C1, E0 80-9F, F0 80-8F),
    // surrogates (ED A0-BF) and code points above U+10FFFF (F4 90-, F5-).
    size_t length;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0)
        lo = 0xA0;
      else if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0)
        lo = 0x90;
      else if (c == 0xF4)
        hi = 0x8F;
    } else {
      return i;
    }
    if (i + 1 >= n || s[i + 1] < lo || s[i + 1] > hi)
      return i;
    for (size_t k = 2; k < length; ++k)
      if (i + k >= n || !isContinuation(s[i + k]))
        return i;
    i += length;
  }
  return std::string::npos;
}

ErrorOr<std::vector<std::string>> readLines(const std::string &path) {
  using Result = ErrorOr<std::vector<std::string>>;
  // A directory opens, then throws from inside the stream on reading.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Result::failure(path + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result::failure("cannot open " + path);
  std::vector<std::string> lines;
  std::string line;
  LineReader reader(in);
  while (reader.next(line)) {
    if (reader.tooLong())
      return Result::failure(path + ":" + std::to_string(reader.lineNumber()) +
                             ": line longer than " +
                             std::to_string(kMaxLineBytes) +
                             " bytes; not a sentence");
    // Editors on Windows start files with a byte order mark; it is not text
    // and would otherwise glue itself to the first sentence's first token.
    if (lines.empty() && line.compare(0, 3, "\xEF\xBB\xBF") == 0)
      line.erase(0, 3);
    if (size_t bad = findInvalidUtf8(line); bad != std::string::npos) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02X",
                    static_cast<unsigned char>(line[bad]));
      return Result::failure(path + ":" + std::to_string(lines.size() + 1) +
                             ": invalid UTF-8 (byte " + byte + " at column " +
                             std::to_string(bad + 1) + ")");
    }
    lines.push_back(std::move(line));
    line.clear();
  }
  if (in.bad())
    return Result::failure("error reading " + path);
  return lines;
}

ErrorOr<Corpus> readCorpus(const std::string &srcPath,
                           const std::string &tgtPath, const Encoder &encodeSrc,
                           const Encoder &encodeTgt,
                           const CorpusOptions &options) {
  auto src = readLines(srcPath);
  if (!src)
    return ErrorOr<Corpus>::failure(src.error());
  auto tgt = readLines(tgtPath);
  if (!tgt)
    return ErrorOr<Corpus>::failure(tgt.error());
  if (src->size() != tgt->size())
    return ErrorOr<Corpus>::failure(
        "parallel files differ in length: " + srcPath + " has " +
        std::to_string(src->size()) + " lines but " + tgtPath + " has " +
        std::to_string(tgt->size()) + " lines");

  Corpus corpus;
  corpus.stats.lines = static_cast<int64_t>(src->size());
  for (size_t i = 0; i < src->size(); ++i) {
    std::string srcText = trim((*src)[i]), tgtText = trim((*tgt)[i]);
    // The text is no longer needed; releasing it as we go keeps the peak at
    // one copy of the corpus.
    std::string().swap((*src)[i]);
    std::string().swap((*tgt)[i]);
    if (srcText.empty() || tgtText.empty()) {
      ++corpus.stats.skippedEmpty;
      continue;
    }
    CorpusPair pair;
    pair.line = static_cast<int64_t>(i) + 1;
    ErrorOr<std::vector<int32_t>> srcIds = encodeSrc(srcText);
    ErrorOr<std::vector<int32_t>> tgtIds = encodeTgt(tgtText);
    if (!srcIds || !tgtIds)
      return (!srcIds ? srcIds.status() : tgtIds.status())
          .withContext((!srcIds ? srcPath : tgtPath) + ":" +
                       std::to_string(pair.line));
    pair.src = std::move(*srcIds);
    pair.tgt = std::move(*tgtIds);
    if (options.maxLen > 0 &&
        (static_cast<int64_t>(pair.src.size()) > options.maxLen ||
         static_cast<int64_t>(pair.tgt.size()) > options.maxLen)) {
      ++corpus.stats.skippedLong;
      continue;
    }
    if (options.keepText) {
      pair.srcText = std::move(srcText);
      pair.tgtText = std::move(tgtText);
    }
    corpus.pairs.push_back(std::move(pair));
  }
  corpus.stats.kept = static_cast<int64_t>(corpus.pairs.size());
  return corpus;
}

std::string describe(const CorpusStats &stats, int64_t maxLen) {
  std::string result = std::to_string(stats.lines) + " lines, " +
                       std::to_string(stats.kept) + " pairs kept, " +
                       std::to_string(stats.skippedEmpty) + " skipped (empty)";
  if (maxLen > 0 || stats.skippedLong > 0)
    result += ", " + std::to_string(stats.skippedLong) +
              " skipped (longer than " + std::to_string(maxLen) + " tokens)";
  return result;
}

} // namespace loom::text
