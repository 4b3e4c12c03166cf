//===- TextFuzzer.cpp - Fuzzing the corpus reader and the tokenizer -------===//
//
// The input is a parallel corpus: the bytes before the first NUL are the
// source file, the bytes after it the target file (the source again when
// there is no NUL). Over it run
//   - findInvalidUtf8, against a decoder written from the Unicode standard's
//     table of well-formed sequences (the two must agree on every input);
//   - readLines and readCorpus with a SentencePiece tokenizer, whose counts
//     and pairs must be consistent with what the header promises;
//   - the tokenizer on the raw bytes: encode, and decode of the ids encode
//     gives and of arbitrary ids taken from the input.
// The tokenizer is trained once, at start-up, on sentences made up here
// from a few words, with SentencePiece's default normalization.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "text/Corpus.h"
#include "text/Tokenizer.h"

#include <cstring>
#include <iterator>
#include <random>

using namespace loom;
using namespace loom::text;
using loom::fuzz::fail;

namespace {

constexpr int64_t kMaxLen = 6;

/// The offset of the first ill-formed sequence, by decoding code points
/// (Unicode 15, table 3-7), or npos.
size_t referenceInvalidUtf8(const std::string &text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t length;
    uint32_t cp, min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + length > n)
      return i;
    for (size_t k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += length;
  }
  return std::string::npos;
}

const Tokenizer &tokenizer() {
  static const Tokenizer trained = [] {
    const char *words[] = {"the",  "a",      "small", "river", "runs",
                           "past", "old",    "house", "green", "trees",
                           "grow", "near",   "water", "two",   "dogs",
                           "play", "in",     "snow",  "under", "blue",
                           "sky",  "people", "walk",  "along", "road"};
    std::mt19937 rng(1);
    std::string text;
    for (int line = 0; line < 400; ++line) {
      for (int w = 0; w < 7; ++w)
        text += std::string(w ? " " : "") + words[rng() % std::size(words)];
      text += '\n';
    }
    fuzz::MemFile file(text);
    TokenizerTrainOptions options;
    options.vocabSize = 48;
    ErrorOr<Tokenizer> tokenizer = Tokenizer::train({file.path()}, options);
    if (!tokenizer)
      fail("cannot train the tokenizer: " + tokenizer.error());
    return *tokenizer;
  }();
  return trained;
}

void checkIds(const std::vector<int32_t> &ids, const char *what) {
  for (int32_t id : ids)
    if (id < 0 || id >= tokenizer().vocabSize())
      fail(std::string(what) + " gives id " + std::to_string(id) +
           " outside the vocabulary");
}

void checkCorpus(const std::string &srcPath, const std::string &tgtPath) {
  Encoder encode = [](const std::string &text) {
    return tokenizer().encode(text);
  };
  CorpusOptions options;
  options.maxLen = kMaxLen;
  options.keepText = true;
  ErrorOr<Corpus> corpus =
      readCorpus(srcPath, tgtPath, encode, encode, options);
  if (!corpus) {
    if (corpus.error().empty())
      fail("a refused corpus without a message");
    return;
  }
  const CorpusStats &stats = corpus->stats;
  if (stats.kept != static_cast<int64_t>(corpus->pairs.size()) ||
      stats.kept + stats.skippedEmpty + stats.skippedLong != stats.lines)
    fail("the corpus counts do not add up: " + describe(stats, kMaxLen));
  int64_t previous = 0;
  for (const CorpusPair &pair : corpus->pairs) {
    if (pair.line <= previous || pair.line > stats.lines)
      fail("pair of line " + std::to_string(pair.line) + " out of order");
    previous = pair.line;
    if (pair.srcText.empty() || pair.tgtText.empty())
      fail("a pair with an empty side is kept");
    if (static_cast<int64_t>(pair.src.size()) > kMaxLen ||
        static_cast<int64_t>(pair.tgt.size()) > kMaxLen)
      fail("a pair longer than the limit is kept");
    for (const std::string *side : {&pair.srcText, &pair.tgtText})
      if (findInvalidUtf8(*side) != std::string::npos)
        fail("a pair with invalid UTF-8 is kept");
    checkIds(pair.src, "readCorpus");
    checkIds(pair.tgt, "readCorpus");
  }
}

void checkTokenizer(const std::string &bytes) {
  ErrorOr<std::vector<int32_t>> ids = tokenizer().encode(bytes);
  if (!ids)
    fail("encode fails: " + ids.error());
  checkIds(*ids, "encode");
  if (ErrorOr<std::string> text = tokenizer().decode(*ids); !text)
    fail("decode of encoded ids fails: " + text.error());
  // The input's bytes as ids, as a model's output might be anything.
  std::vector<int32_t> arbitrary(bytes.size() / 4);
  if (!arbitrary.empty())
    std::memcpy(arbitrary.data(), bytes.data(), arbitrary.size() * 4);
  if (ErrorOr<std::string> text = tokenizer().decode(arbitrary); !text)
    fail("decode of arbitrary ids fails: " + text.error());
  for (int32_t id : arbitrary)
    (void)tokenizer().piece(id);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  (void)tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  size_t nul = bytes.find('\0');
  std::string src = bytes.substr(0, nul);
  std::string tgt = nul == std::string::npos ? src : bytes.substr(nul + 1);

  for (const std::string *side : {&src, &tgt})
    if (size_t found = findInvalidUtf8(*side),
        expected = referenceInvalidUtf8(*side);
        found != expected)
      fail("findInvalidUtf8 says " + std::to_string(found) +
           ", the reference decoder " + std::to_string(expected));

  fuzz::MemFile srcFile(src), tgtFile(tgt);
  ErrorOr<std::vector<std::string>> lines = readLines(srcFile.path());
  if (lines) {
    for (const std::string &line : *lines)
      if (line.find('\n') != std::string::npos ||
          findInvalidUtf8(line) != std::string::npos)
        fail("readLines returns a line with a newline or invalid UTF-8");
  } else if (lines.error().empty()) {
    fail("readLines refuses without a message");
  }
  checkCorpus(srcFile.path(), tgtFile.path());
  checkTokenizer(src);
  return 0;
}
