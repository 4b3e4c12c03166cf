//===- Bleu.cpp - Corpus BLEU as sacreBLEU computes it --------------------===//
//
// Every step mirrors a line of sacreBLEU 2.x (metrics/bleu.py,
// tokenizers/tokenizer_13a.py, tokenizers/tokenizer_re.py); the comments
// name the Python each step reproduces. The 13a regular expressions are
// replayed as character loops: each rule is one left-to-right pass that, like
// re.sub, resumes after the end of every match, so overlapping candidates are
// treated exactly as Python treats them.
//
//===----------------------------------------------------------------------===//

#include "text/Bleu.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace loom::text {

namespace {

/// Decodes the code point at `text[i]`. A byte that does not start a
/// well-formed sequence counts as one character of its own (code point
/// 0xFFFD), so no function here reads past a broken sequence.
char32_t decodeAt(std::string_view text, size_t i, size_t &length) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b0 = byte(i);
  length = 1;
  if (b0 < 0x80)
    return b0;
  size_t need;
  char32_t cp, min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0xFFFD;
  }
  if (i + need >= text.size()) // truncated at the end of the text
    return 0xFFFD;
  for (size_t k = 1; k <= need; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80)
      return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0xFFFD;
  length = need + 1;
  return cp;
}

void appendUtf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// Python's str.isspace(): what str.split() and str.strip() remove.
bool isPythonSpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/// Python's str.replace(from, to): one left-to-right pass, no rescanning of
/// what was replaced.
std::string replaceAll(const std::string &text, std::string_view from,
                       std::string_view to) {
  size_t pos = text.find(from);
  if (pos == std::string::npos)
    return text;
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  for (; pos != std::string::npos; pos = text.find(from, start)) {
    out.append(text, start, pos - start);
    out.append(to);
    start = pos + from.size();
  }
  out.append(text, start, std::string::npos);
  return out;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isPeriodOrComma(char c) { return c == '.' || c == ','; }

/// The class [\{-\~\[-\` -\&\(-\+\:-\@\/] of tokenizer_re.py's first rule:
/// ASCII punctuation and symbols except ' , - . (and the space itself, which
/// the final whitespace collapse makes irrelevant).
bool isSplitSymbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') ||
         (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
         (c >= ':' && c <= '@') || c == '/';
}

/// One re.sub pass of a two-character rule `(A)(B)` -> `pre A mid B post`.
/// Bytes of multi-byte characters are never '.', ',', '-' or a digit, so a
/// rule matches at a byte exactly where Python matches at a code point, and
/// a match never ends inside a character.
template <typename First, typename Second>
std::string substitutePairs(const std::string &s, First first, Second second,
                            const char *pre, const char *mid,
                            const char *post) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out += pre;
      out += s[i];
      out += mid;
      out += s[i + 1];
      out += post;
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string joinWords(const std::vector<std::string_view> &words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i)
      out += ' ';
    out.append(words[i]);
  }
  return out;
}

/// Python's str.lower() on the ranges Bleu.h lists; -1 when the code point is
/// left as it is.
int64_t lowerCodePoint(char32_t c) {
  int64_t cp = c; // signed, so that -1 below stays -1
  if (cp >= 'A' && cp <= 'Z')
    return cp + 0x20;
  if (cp < 0xC0)
    return -1;
  if (cp <= 0xDE)
    return cp == 0xD7 ? -1 : cp + 0x20; // U+00D7 is '×'
  if (cp >= 0x100 && cp <= 0x137) // Ā ā .. Ķ ķ (U+0130 is handled apart)
    return cp % 2 == 0 ? cp + 1 : -1;
  if (cp >= 0x139 && cp <= 0x148) // Ĺ ĺ .. Ň ň
    return cp % 2 == 1 ? cp + 1 : -1;
  if (cp >= 0x14A && cp <= 0x177) // Ŋ ŋ .. Ŷ ŷ
    return cp % 2 == 0 ? cp + 1 : -1;
  if (cp == 0x178) // Ÿ
    return 0xFF;
  if (cp >= 0x179 && cp <= 0x17E) // Ź ź .. Ž ž
    return cp % 2 == 1 ? cp + 1 : -1;
  if (cp >= 0x400 && cp <= 0x40F) // Ѐ .. Џ
    return cp + 0x50;
  if (cp >= 0x410 && cp <= 0x42F) // А .. Я
    return cp + 0x20;
  if ((cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF)) // Ѡ .. Ҿ
    return cp % 2 == 0 ? cp + 1 : -1;
  if (cp == 0x4C0) // Ӏ
    return 0x4CF;
  if (cp >= 0x4C1 && cp <= 0x4CE) // Ӂ .. Ӎ
    return cp % 2 == 1 ? cp + 1 : -1;
  if (cp >= 0x4D0 && cp <= 0x52F) // Ӑ .. Ԯ
    return cp % 2 == 0 ? cp + 1 : -1;
  return -1;
}

/// An n-gram as the ids of its words; unused slots hold ~0u.
using NGram = std::array<uint32_t, BleuStats::kMaxOrder>;

/// The sorted n-grams of order `n` of a sentence given as word ids.
std::vector<NGram> sortedNGrams(const std::vector<uint32_t> &ids, size_t n) {
  std::vector<NGram> grams;
  if (ids.size() < n)
    return grams;
  grams.reserve(ids.size() - n + 1);
  for (size_t i = 0; i + n <= ids.size(); ++i) {
    NGram g;
    g.fill(~0u);
    std::copy(ids.begin() + i, ids.begin() + i + n, g.begin());
    grams.push_back(g);
  }
  std::sort(grams.begin(), grams.end());
  return grams;
}

} // namespace

bool isValidUtf8(std::string_view text, size_t *badOffset) {
  for (size_t i = 0; i < text.size();) {
    size_t length;
    char32_t cp = decodeAt(text, i, length);
    // U+FFFD itself is three bytes long; one byte means a broken sequence.
    if (cp == 0xFFFD && length == 1) {
      if (badOffset)
        *badOffset = i;
      return false;
    }
    i += length;
  }
  return true;
}

std::string_view rstripUtf8(std::string_view text) {
  size_t end = 0;
  for (size_t i = 0; i < text.size();) {
    size_t length;
    char32_t cp = decodeAt(text, i, length);
    i += length;
    if (!isPythonSpace(cp))
      end = i;
  }
  return text.substr(0, end);
}

std::vector<std::string_view> splitWhitespace(std::string_view text) {
  std::vector<std::string_view> words;
  size_t start = std::string_view::npos;
  for (size_t i = 0; i < text.size();) {
    size_t length;
    bool space = isPythonSpace(decodeAt(text, i, length));
    if (space && start != std::string_view::npos) {
      words.push_back(text.substr(start, i - start));
      start = std::string_view::npos;
    } else if (!space && start == std::string_view::npos) {
      start = i;
    }
    i += length;
  }
  if (start != std::string_view::npos)
    words.push_back(text.substr(start));
  return words;
}

std::string lowercaseUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t length;
    char32_t cp = decodeAt(text, i, length);
    if (cp == 0x130) {
      // Python lowercases 'İ' to 'i' followed by U+0307 COMBINING DOT ABOVE.
      out += 'i';
      appendUtf8(out, 0x307);
    } else if (int64_t lower = lowerCodePoint(cp); lower >= 0) {
      appendUtf8(out, static_cast<char32_t>(lower));
    } else {
      out.append(text.substr(i, length)); // also keeps broken bytes as-is
    }
    i += length;
  }
  return out;
}

std::string tokenize13a(const std::string &line) {
  // tokenizer_13a.py, the language-independent part.
  std::string s = replaceAll(line, "<skipped>", "");
  s = replaceAll(s, "-\n", "");
  s = replaceAll(s, "\n", " ");
  s = replaceAll(s, "&quot;", "\"");
  s = replaceAll(s, "&amp;", "&");
  s = replaceAll(s, "&lt;", "<");
  s = replaceAll(s, "&gt;", ">");
  s = " " + s + " ";

  // tokenizer_re.py: r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' -> r' \1 '.
  std::string t;
  t.reserve(s.size() * 2);
  for (char c : s) {
    if (c != ' ' && isSplitSymbol(c)) {
      t += ' ';
      t += c;
      t += ' ';
    } else {
      t += c;
    }
  }
  auto notDigit = [](char c) { return !isDigit(c); };
  // r'([^0-9])([\.,])' -> r'\1 \2 ': period and comma unless after a digit.
  t = substitutePairs(t, notDigit, isPeriodOrComma, "", " ", " ");
  // r'([\.,])([^0-9])' -> r' \1 \2': period and comma unless before a digit.
  t = substitutePairs(t, isPeriodOrComma, notDigit, " ", " ", "");
  // r'([0-9])(-)' -> r'\1 \2 ': a dash after a digit.
  t = substitutePairs(
      t, isDigit, [](char c) { return c == '-'; }, "", " ", " ");
  // ' '.join(line.strip().split())
  return joinWords(splitWhitespace(t));
}

bool isBleuTokenizer(const std::string &name) {
  return name == "13a" || name == "none";
}

std::string preprocessSegment(const std::string &segment,
                              const BleuOptions &options) {
  // BLEU._preprocess_segment: lowercase, then tokenizer(sent.rstrip()).
  std::string text = options.lowercase ? lowercaseUtf8(segment) : segment;
  std::string stripped(rstripUtf8(text));
  if (options.tokenize == "none")
    return stripped;
  return tokenize13a(stripped);
}

void BleuStats::addTokens(const std::vector<std::string_view> &hyp,
                          const std::vector<std::string_view> &ref) {
  // Words become small ids so that an n-gram compares as four integers.
  std::unordered_map<std::string_view, uint32_t> vocab;
  auto toIds = [&](const std::vector<std::string_view> &words) {
    std::vector<uint32_t> ids;
    ids.reserve(words.size());
    for (std::string_view w : words)
      ids.push_back(vocab.emplace(w, uint32_t(vocab.size())).first->second);
    return ids;
  };
  std::vector<uint32_t> hypIds = toIds(hyp), refIds = toIds(ref);
  sysLen += int64_t(hyp.size());
  refLen += int64_t(ref.size());
  for (size_t n = 1; n <= size_t(kMaxOrder); ++n) {
    std::vector<NGram> h = sortedNGrams(hypIds, n);
    std::vector<NGram> r = sortedNGrams(refIds, n);
    totals[n - 1] += int64_t(h.size());
    // For every distinct n-gram: min(count in hyp, count in ref).
    size_t i = 0, j = 0;
    while (i < h.size() && j < r.size()) {
      if (h[i] < r[j]) {
        ++i;
      } else if (r[j] < h[i]) {
        ++j;
      } else {
        size_t i2 = i, j2 = j;
        while (i2 < h.size() && h[i2] == h[i])
          ++i2;
        while (j2 < r.size() && r[j2] == r[j])
          ++j2;
        counts[n - 1] += int64_t(std::min(i2 - i, j2 - j));
        i = i2;
        j = j2;
      }
    }
  }
}

void BleuStats::addSegment(const std::string &hyp, const std::string &ref,
                           const BleuOptions &options) {
  std::string h = preprocessSegment(hyp, options);
  std::string r = preprocessSegment(ref, options);
  addTokens(splitWhitespace(h), splitWhitespace(r));
}

BleuStats &BleuStats::operator+=(const BleuStats &other) {
  for (int n = 0; n < kMaxOrder; ++n) {
    counts[n] += other.counts[n];
    totals[n] += other.totals[n];
  }
  sysLen += other.sysLen;
  refLen += other.refLen;
  return *this;
}

BleuScore computeBleu(const BleuStats &stats) {
  BleuScore s;
  s.sysLen = stats.sysLen;
  s.refLen = stats.refLen;
  s.ratio = stats.refLen ? double(stats.sysLen) / double(stats.refLen) : 0.0;
  if (stats.sysLen < stats.refLen)
    s.bp = stats.sysLen > 0
               ? std::exp(1 - double(stats.refLen) / double(stats.sysLen))
               : 0.0;
  else
    s.bp = 1.0;

  // "Early stop if there are no matches": score and precisions stay 0.
  bool anyMatch = false;
  for (int64_t c : stats.counts)
    anyMatch |= c != 0;
  if (!anyMatch)
    return s;

  for (int n = 0; n < BleuStats::kMaxOrder; ++n) {
    if (stats.totals[n] == 0)
      break;
    // With smooth_method 'none' an order without matches keeps precision 0.
    if (stats.counts[n] != 0)
      s.precisions[n] =
          100. * double(stats.counts[n]) / double(stats.totals[n]);
  }
  // utils.my_log floors log(0) at -9999999999, which drives exp() to 0.
  double sum = 0;
  for (double p : s.precisions)
    sum += p == 0.0 ? -9999999999.0 : std::log(p);
  s.score = s.bp * std::exp(sum / BleuStats::kMaxOrder);
  return s;
}

BleuScore corpusBleu(const std::vector<std::string> &hyps,
                     const std::vector<std::string> &refs,
                     const BleuOptions &options) {
  assert(hyps.size() == refs.size() && "one reference per hypothesis");
  BleuStats stats;
  for (size_t i = 0; i < hyps.size() && i < refs.size(); ++i)
    stats.addSegment(hyps[i], refs[i], options);
  return computeBleu(stats);
}

std::string BleuScore::formatted() const {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer,
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f "
                "hyp_len = %lld ref_len = %lld)",
                score, precisions[0], precisions[1], precisions[2],
                precisions[3], bp, ratio, static_cast<long long>(sysLen),
                static_cast<long long>(refLen));
  return buffer;
}

std::string bleuSignature(bool lowercase, const std::string &tokenize) {
  // BLEUSignature's fields in its order; smoothing 'none' takes no value.
  return std::string("BLEU|nrefs:1|case:") + (lowercase ? "lc" : "mixed") +
         "|eff:no|tok:" + tokenize + "|smooth:none|version:loom-1";
}

} // namespace loom::text
