//===- Corpus.h - Reading parallel corpora ----------------------*- C++ -*-===//
//
// A parallel corpus is two UTF-8 files with one sentence per line, line i of
// one the translation of line i of the other. Bad data is handled so that the
// user learns what is wrong rather than training on garbage:
//   - files of different line counts are an error naming both files and both
//     counts (the pairing would be off from the first missing line on);
//   - invalid UTF-8 is an error naming the file and the 1-based line;
//   - a pair with an empty side (after trimming whitespace) or a side longer
//     than the length limit is skipped and counted, since real corpora have a
//     few of these and they carry no signal, or more than the model can take.
// Lines may end in "\n", "\r\n" (Windows) or "\r" (old Mac); a UTF-8 byte
// order mark at the start of a file is dropped.
//
// Tokenization goes through a callback, so that training, validation and
// scoring read files with the same code and the same limits.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_CORPUS_H
#define LOOM_TEXT_CORPUS_H

#include "abi/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loom::text {

/// The byte offset of the first byte that is not part of well-formed UTF-8
/// (overlong forms, surrogates and code points above U+10FFFF are not), or
/// std::string::npos when `text` is valid.
size_t findInvalidUtf8(const std::string &text);

/// Reads the lines of a UTF-8 text file, dropping line terminators ("\n",
/// "\r\n" or "\r", as LineReader.h splits them) and a leading byte order
/// mark. Fails naming the file and line on invalid UTF-8 or a line longer
/// than kMaxLineBytes.
ErrorOr<std::vector<std::string>> readLines(const std::string &path);

/// Turns a sentence into the token ids the model sees; the length limit
/// applies to what it returns (so bos/eos count when it adds them).
using Encoder =
    std::function<ErrorOr<std::vector<int32_t>>(const std::string &)>;

struct CorpusOptions {
  /// Pairs with a side of more tokens than this are skipped; 0: no limit.
  int64_t maxLen = 0;
  /// Keep the (trimmed) sentences beside their ids, e.g. as BLEU references.
  bool keepText = false;
};

struct CorpusPair {
  /// The 1-based line both sentences came from.
  int64_t line = 0;
  std::vector<int32_t> src, tgt;
  /// Only with CorpusOptions::keepText.
  std::string srcText, tgtText;
};

struct CorpusStats {
  int64_t lines = 0;
  int64_t kept = 0;
  int64_t skippedEmpty = 0;
  int64_t skippedLong = 0;
};

struct Corpus {
  std::vector<CorpusPair> pairs;
  CorpusStats stats;
};

/// Reads the corpus `srcPath` / `tgtPath`, encoding each side with its
/// encoder (the same one for a joint vocabulary).
ErrorOr<Corpus> readCorpus(const std::string &srcPath,
                           const std::string &tgtPath, const Encoder &encodeSrc,
                           const Encoder &encodeTgt,
                           const CorpusOptions &options = {});

/// One line for logs: "29000 lines, 28990 pairs kept, 4 skipped (empty),
/// 6 skipped (longer than 100 tokens)".
std::string describe(const CorpusStats &stats, int64_t maxLen);

} // namespace loom::text

#endif // LOOM_TEXT_CORPUS_H
