//===- Bleu.h - Corpus BLEU as sacreBLEU computes it ------------*- C++ -*-===//
//
// Corpus BLEU with one reference per segment, computed the way sacreBLEU 2.x
// computes it, so that a Loom score can be quoted next to a sacreBLEU score:
//
//   - each segment is lowercased (optionally), right-stripped and tokenized
//     (13a, mteval-v13a's tokenizer, or none: split on whitespace);
//   - n-gram matches (n = 1..4) are clipped by the reference's counts, and
//     match counts, n-gram totals and lengths are summed over the corpus;
//   - BLEU = BP * exp(mean of log precisions), BP = exp(1 - ref/sys) when the
//     hypotheses are shorter than the references.
//
// Smoothing is sacreBLEU's 'none' (`--smooth-method none`): an n-gram order
// with no match makes the score 0. sacreBLEU's default, 'exp', differs only
// then (it replaces a zero precision by 100 / (2^k * total)); on any real
// test set every order has matches and the two agree.
//
// Text is UTF-8. Whitespace is what Python's str.split() splits on (ASCII
// whitespace, U+001C..U+001F, U+0085, U+00A0, U+2000..U+200A, ...), since
// sacreBLEU splits Python strings.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_BLEU_H
#define LOOM_TEXT_BLEU_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::text {

/// sacreBLEU's Tokenizer13a applied to `line`: removes "<skipped>", joins
/// "-\n", turns "\n" into a space, unescapes &quot; &amp; &lt; &gt; (in that
/// order, one pass each), splits off punctuation and symbols, splits '.' and
/// ',' unless they sit between digits, splits '-' after a digit, then leaves
/// single spaces between tokens and none at the ends. `line` must be UTF-8;
/// only ASCII characters are ever split off, so words in other scripts are
/// kept whole.
std::string tokenize13a(const std::string &line);

/// Python's str.lower() for ASCII, Latin-1 Supplement, Latin Extended-A
/// (U+0100..U+017F, with U+0130 'İ' becoming "i̇" as in Python) and
/// Cyrillic (U+0400..U+052F). Other characters are left as they are: Greek
/// among them, since Python lowercases a capital sigma to 'σ' or 'ς'
/// depending on the letters around it.
std::string lowercaseUtf8(std::string_view text);

/// Whether `text` is well-formed UTF-8 as Python decodes it (no overlong
/// forms, no surrogates, nothing above U+10FFFF). On failure `*badOffset`
/// (when given) is the offset of the first byte that cannot be decoded.
bool isValidUtf8(std::string_view text, size_t *badOffset = nullptr);

/// `text` without trailing whitespace, as Python's str.rstrip().
std::string_view rstripUtf8(std::string_view text);

/// The words of `text` as Python's str.split() returns them.
std::vector<std::string_view> splitWhitespace(std::string_view text);

/// How segments are prepared before n-grams are counted.
struct BleuOptions {
  bool lowercase = false;
  /// "13a" or "none" (see isBleuTokenizer).
  std::string tokenize = "13a";
};

/// Whether `name` is a tokenizer this file implements.
bool isBleuTokenizer(const std::string &name);

/// A segment as sacreBLEU sees it before splitting into words: lowercased
/// when asked, right-stripped, then tokenized.
std::string preprocessSegment(const std::string &segment,
                              const BleuOptions &options);

/// BLEU's sufficient statistics: summed over segments, never averaged.
struct BleuStats {
  static constexpr int kMaxOrder = 4;
  /// counts[n-1]: hypothesis n-grams found in the reference (clipped).
  int64_t counts[kMaxOrder] = {0, 0, 0, 0};
  /// totals[n-1]: hypothesis n-grams.
  int64_t totals[kMaxOrder] = {0, 0, 0, 0};
  int64_t sysLen = 0;
  int64_t refLen = 0;

  /// Adds the statistics of one segment whose words are already split.
  void addTokens(const std::vector<std::string_view> &hyp,
                 const std::vector<std::string_view> &ref);
  /// Adds one raw segment pair, preprocessed as `options` says.
  void addSegment(const std::string &hyp, const std::string &ref,
                  const BleuOptions &options);
  BleuStats &operator+=(const BleuStats &other);
};

struct BleuScore {
  /// 0..100.
  double score = 0;
  /// In percent; 0 for an order with no match.
  double precisions[BleuStats::kMaxOrder] = {0, 0, 0, 0};
  double bp = 0;
  /// sysLen / refLen (0 when refLen is 0).
  double ratio = 0;
  int64_t sysLen = 0;
  int64_t refLen = 0;

  /// sacreBLEU's line, e.g. "BLEU = 35.12 67.1/41.3/27.9/19.0 (BP = 1.000
  /// ratio = 1.012 hyp_len = 12345 ref_len = 12197)".
  std::string formatted() const;
};

/// sacreBLEU's BLEU.compute_bleu with smooth_method='none' and
/// effective_order=False, the same floating-point operations in the same
/// order, so the printed digits agree.
BleuScore computeBleu(const BleuStats &stats);

/// Corpus BLEU of `hyps` against `refs` (one reference per hypothesis; the
/// two must have the same size).
BleuScore corpusBleu(const std::vector<std::string> &hyps,
                     const std::vector<std::string> &refs,
                     const BleuOptions &options = {});

/// The reproducibility signature in sacreBLEU 2.x's form, e.g.
/// "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:none|version:loom-1".
/// "smooth:none" says truthfully what computeBleu does (sacreBLEU's
/// `--smooth-method none`); the version names Loom's implementation, not a
/// sacreBLEU release.
std::string bleuSignature(bool lowercase, const std::string &tokenize);

} // namespace loom::text

#endif // LOOM_TEXT_BLEU_H
