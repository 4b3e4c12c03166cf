//===- BleuTest.cpp - Corpus BLEU and the 13a tokenizer -------------------===//
//
// Every expected value is worked out by hand in the comment above it:
// matches per order (clipped), totals, BP = exp(1 - r/c) when c < r, and
// BLEU = 100 * BP * (p1 p2 p3 p4)^(1/4). The printed lines are what
// sacreBLEU prints for the same statistics.
//
//===----------------------------------------------------------------------===//

#include "text/Bleu.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace loom::text;

namespace {

BleuScore bleu(const std::vector<std::string> &hyps,
               const std::vector<std::string> &refs, bool lowercase = false,
               const std::string &tokenize = "13a") {
  BleuOptions options;
  options.lowercase = lowercase;
  options.tokenize = tokenize;
  return corpusBleu(hyps, refs, options);
}

BleuStats stats(const std::string &hyp, const std::string &ref) {
  BleuStats s;
  s.addSegment(hyp, ref, BleuOptions());
  return s;
}

void expectCounts(const BleuStats &s, std::vector<int64_t> counts,
                  std::vector<int64_t> totals) {
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(s.counts[n], counts[n]) << "order " << n + 1;
    EXPECT_EQ(s.totals[n], totals[n]) << "order " << n + 1;
  }
}

TEST(Bleu, IdenticalSentenceIs100) {
  // 6 words: 6/6, 5/5, 4/4, 3/3 n-grams match; "the" twice in both.
  BleuScore s = bleu({"the cat sat on the mat"}, {"the cat sat on the mat"});
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.formatted(), "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 "
                           "ratio = 1.000 hyp_len = 6 ref_len = 6)");
}

TEST(Bleu, PartialMatches) {
  // hyp: the quick brown fox jumps over the dog          (8 words)
  // ref: the quick brown fox jumped over the lazy dog    (9 words)
  // 1-grams: all but "jumps"                        7/8
  // 2-grams: the quick, quick brown, brown fox,
  //          over the (not fox jumps, jumps over,
  //          the dog)                               4/7
  // 3-grams: the quick brown, quick brown fox       2/6
  // 4-grams: the quick brown fox                    1/5
  // p1 p2 p3 p4 = 7/8 * 4/7 * 2/6 * 1/5 = 1/30
  // BP = exp(1 - 9/8) = exp(-0.125) = 0.882497
  // BLEU = 100 * 0.882497 * 30^(-1/4) = 100 * 0.882497 * 0.427287 = 37.708
  BleuScore s = bleu({"the quick brown fox jumps over the dog"},
                     {"the quick brown fox jumped over the lazy dog"});
  EXPECT_NEAR(s.score, 100 * std::exp(-0.125) * std::pow(30.0, -0.25), 1e-9);
  EXPECT_NEAR(s.score, 37.708, 1e-3);
  EXPECT_NEAR(s.precisions[0], 87.5, 1e-12);
  EXPECT_NEAR(s.precisions[1], 400.0 / 7, 1e-12);
  EXPECT_NEAR(s.precisions[2], 100.0 / 3, 1e-12);
  EXPECT_NEAR(s.precisions[3], 20.0, 1e-12);
  EXPECT_NEAR(s.bp, std::exp(-0.125), 1e-15);
  EXPECT_EQ(s.formatted(), "BLEU = 37.71 87.5/57.1/33.3/20.0 (BP = 0.882 "
                           "ratio = 0.889 hyp_len = 8 ref_len = 9)");
}

TEST(Bleu, NoFourGramMatchIsZero) {
  // hyp: the cat sat on the mat; ref: the cat is on the mat
  // 1-grams: the x2, cat, on, mat                   5/6
  // 2-grams: the cat, on the, the mat               3/5
  // 3-grams: on the mat                             1/4
  // 4-grams: none                                   0/3
  // No smoothing: log(0) makes the score 0; the precisions are still shown.
  BleuScore s = bleu({"the cat sat on the mat"}, {"the cat is on the mat"});
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.bp, 1.0);
  EXPECT_EQ(s.formatted(), "BLEU = 0.00 83.3/60.0/25.0/0.0 (BP = 1.000 "
                           "ratio = 1.000 hyp_len = 6 ref_len = 6)");
  expectCounts(stats("the cat sat on the mat", "the cat is on the mat"),
               {5, 3, 1, 0}, {6, 5, 4, 3});
}

TEST(Bleu, EmptyHypothesisIsZeroWithBpZero) {
  // c = 0 < r = 2: sacreBLEU sets BP to 0 rather than divide by zero; no
  // n-gram at all, so every precision is 0 and so is the ratio's numerator.
  BleuScore s = bleu({""}, {"the cat"});
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.bp, 0.0);
  EXPECT_EQ(s.sysLen, 0);
  EXPECT_EQ(s.refLen, 2);
  EXPECT_EQ(s.formatted(), "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 "
                           "ratio = 0.000 hyp_len = 0 ref_len = 2)");
}

TEST(Bleu, LongerHypothesisHasBpOne) {
  // hyp: the cat sat on the mat today (7), ref: the cat sat on the mat (6)
  // 6/7, 5/6, 4/5, 3/4: the product telescopes to 3/7; c > r so BP = 1.
  // BLEU = 100 * (3/7)^(1/4) = 100 * exp(ln(0.428571) / 4)
  //      = 100 * exp(-0.847298 / 4) = 100 * exp(-0.211824) = 80.911
  BleuScore s =
      bleu({"the cat sat on the mat today"}, {"the cat sat on the mat"});
  EXPECT_EQ(s.bp, 1.0);
  EXPECT_NEAR(s.score, 100 * std::pow(3.0 / 7, 0.25), 1e-9);
  EXPECT_EQ(s.formatted(), "BLEU = 80.91 85.7/83.3/80.0/75.0 (BP = 1.000 "
                           "ratio = 1.167 hyp_len = 7 ref_len = 6)");
}

TEST(Bleu, ShorterHypothesisPaysBrevityPenalty) {
  // hyp: the cat sat on the (5), ref: the cat sat on the mat (6)
  // Every n-gram matches (5/5 4/4 3/3 2/2), so BLEU = 100 * BP with
  // BP = exp(1 - 6/5) = exp(-0.2) = 0.818731.
  BleuScore s = bleu({"the cat sat on the"}, {"the cat sat on the mat"});
  EXPECT_NEAR(s.bp, std::exp(1 - 6.0 / 5), 1e-15);
  EXPECT_NEAR(s.score, 81.873075, 1e-6);
  EXPECT_EQ(s.formatted(), "BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819 "
                           "ratio = 0.833 hyp_len = 5 ref_len = 6)");
}

TEST(Bleu, ShortSentenceWithoutFourGramsIsZero) {
  // 2 words: no 3- or 4-grams at all (totals 0), and without effective
  // order that makes corpus BLEU 0 even for a perfect match.
  BleuScore s = bleu({"the cat"}, {"the cat"});
  EXPECT_EQ(s.score, 0.0);
  EXPECT_EQ(s.formatted(), "BLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 1.000 "
                           "ratio = 1.000 hyp_len = 2 ref_len = 2)");
}

TEST(Bleu, MatchesAreClippedByReferenceCounts) {
  // "the" 4 times in the hypothesis but once in the reference: 1/4.
  expectCounts(stats("the the the the", "the cat"), {1, 0, 0, 0}, {4, 3, 2, 1});
}

TEST(Bleu, CorpusSumsStatisticsNotScores) {
  // Segment 1: identical, 6 words: counts 6 5 4 3, totals 6 5 4 3.
  // Segment 2: hyp "a dog barked loudly", ref "a dog barked":
  //            counts 3 2 1 0, totals 4 3 2 1 (its own BLEU is 0).
  // Sums: 9/10, 7/8, 5/6, 3/4; c = 10 > r = 9, BP = 1.
  // p1 p2 p3 p4 = 0.9 * 0.875 * 0.833333 * 0.75 = 0.4921875
  // BLEU = 100 * 0.4921875^(1/4) = 100 * sqrt(0.701561) = 83.759
  // (The mean of the sentence scores would be (100 + 0) / 2 = 50.)
  std::vector<std::string> hyps = {"the cat sat on the mat",
                                   "a dog barked loudly"};
  std::vector<std::string> refs = {"the cat sat on the mat", "a dog barked"};
  BleuScore s = bleu(hyps, refs);
  EXPECT_NEAR(s.score, 100 * std::pow(0.4921875, 0.25), 1e-9);
  EXPECT_EQ(s.formatted(), "BLEU = 83.76 90.0/87.5/83.3/75.0 (BP = 1.000 "
                           "ratio = 1.111 hyp_len = 10 ref_len = 9)");

  BleuStats sum = stats(hyps[0], refs[0]);
  sum += stats(hyps[1], refs[1]);
  expectCounts(sum, {9, 7, 5, 3}, {10, 8, 6, 4});
  EXPECT_EQ(sum.sysLen, 10);
  EXPECT_EQ(sum.refLen, 9);
  EXPECT_EQ(computeBleu(sum).score, s.score);
}

TEST(Bleu, TokenizationChangesTheScore) {
  // 13a splits "mat." into "mat ." so the period matches as a word; split on
  // whitespace alone, "mat." and "mat" differ.
  BleuScore tok =
      bleu({"the cat sat on the mat."}, {"the cat sat on the mat ."});
  EXPECT_DOUBLE_EQ(tok.score, 100.0);
  BleuScore none = bleu({"the cat sat on the mat."},
                        {"the cat sat on the mat ."}, false, "none");
  // none: "mat." is no word of the reference: 5/6 4/5 3/4 2/3, product 1/3;
  // 6 words against 7, BP = exp(1 - 7/6).
  EXPECT_NEAR(none.score, 100 * std::exp(1 - 7.0 / 6) * std::pow(1.0 / 3, 0.25),
              1e-9);
}

TEST(Bleu, Lowercase) {
  // Mixed case: no word of "The Cat Sat On The Mat" is in the reference.
  BleuScore mixed =
      bleu({"The Cat Sat On The Mat"}, {"the cat sat on the mat"});
  EXPECT_EQ(mixed.score, 0.0);
  EXPECT_EQ(mixed.precisions[0], 0.0);
  BleuScore lc =
      bleu({"The Cat Sat On The Mat"}, {"the cat sat on the mat"}, true);
  EXPECT_DOUBLE_EQ(lc.score, 100.0);
  BleuScore umlauts =
      bleu({"ÄPFEL UND BIRNEN SIND GUT"}, {"äpfel und birnen sind gut"}, true);
  EXPECT_DOUBLE_EQ(umlauts.score, 100.0);
}

TEST(Bleu, Signature) {
  EXPECT_EQ(bleuSignature(false, "13a"),
            "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:none|"
            "version:loom-1");
  EXPECT_EQ(bleuSignature(true, "none"),
            "BLEU|nrefs:1|case:lc|eff:no|tok:none|smooth:none|"
            "version:loom-1");
}

TEST(Tokenize13a, Punctuation) {
  EXPECT_EQ(tokenize13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize13a("(test)"), "( test )");
  EXPECT_EQ(tokenize13a("x=1+2*3/4"), "x = 1 + 2 * 3 / 4");
  EXPECT_EQ(tokenize13a("a@b.com"), "a @ b . com");
  // The apostrophe is not in 13a's class of split characters.
  EXPECT_EQ(tokenize13a("it's"), "it's");
  EXPECT_EQ(tokenize13a("U.S.A."), "U . S . A .");
  EXPECT_EQ(tokenize13a("e.g.,"), "e . g . ,");
  EXPECT_EQ(tokenize13a("..."), ". . .");
  EXPECT_EQ(tokenize13a("  spaced   out  "), "spaced out");
  EXPECT_EQ(tokenize13a(""), "");
}

TEST(Tokenize13a, Numbers) {
  // '.' and ',' stay inside a number: split unless both neighbours are
  // digits.
  EXPECT_EQ(tokenize13a("It costs $3.14."), "It costs $ 3.14 .");
  EXPECT_EQ(tokenize13a("1,000 people"), "1,000 people");
  EXPECT_EQ(tokenize13a("1,000."), "1,000 .");
  EXPECT_EQ(tokenize13a("5.a"), "5 . a");
  EXPECT_EQ(tokenize13a("a.5"), "a . 5");
  // A dash is split only after a digit.
  EXPECT_EQ(tokenize13a("well-known"), "well-known");
  EXPECT_EQ(tokenize13a("3-4"), "3 - 4");
  EXPECT_EQ(tokenize13a("pages 10-20"), "pages 10 - 20");
  EXPECT_EQ(tokenize13a("12-"), "12 -");
  EXPECT_EQ(tokenize13a("-12"), "-12");
}

TEST(Tokenize13a, EntitiesSkippedAndNewlines) {
  EXPECT_EQ(tokenize13a("A &amp; B"), "A & B");
  EXPECT_EQ(tokenize13a("&lt;b&gt;"), "< b >");
  EXPECT_EQ(tokenize13a("&quot;hi&quot;"), "\" hi \"");
  // One pass per entity, in sacreBLEU's order: &amp; first yields "&lt;",
  // which the later &lt; pass then unescapes.
  EXPECT_EQ(tokenize13a("&amp;lt;"), "<");
  EXPECT_EQ(tokenize13a("a<skipped>b"), "ab");
  EXPECT_EQ(tokenize13a("foo-\nbar"), "foobar");
  EXPECT_EQ(tokenize13a("a\nb"), "a b");
}

TEST(Tokenize13a, Utf8WordsStayWhole) {
  EXPECT_EQ(tokenize13a("Grüße aus München."), "Grüße aus München .");
  EXPECT_EQ(tokenize13a("naïve café."), "naïve café .");
  // Full-width punctuation is not ASCII: 13a leaves it attached.
  EXPECT_EQ(tokenize13a("中文，测试。"), "中文，测试。");
  // Python splits on NO-BREAK SPACE and IDEOGRAPHIC SPACE.
  EXPECT_EQ(tokenize13a("a\u00a0b\u3000c"), "a b c");
  // ZERO WIDTH SPACE is not whitespace to Python.
  EXPECT_EQ(tokenize13a("a\u200bb"), "a\u200bb");
}

TEST(Text, LowercaseUtf8) {
  EXPECT_EQ(lowercaseUtf8("HELLO World"), "hello world");
  EXPECT_EQ(lowercaseUtf8("ÄPFEL ÖL ÜBER"), "äpfel öl über");
  EXPECT_EQ(lowercaseUtf8("ß × Ÿ"), "ß × ÿ");
  EXPECT_EQ(lowercaseUtf8("ŁÓDŹ"), "łódź");
  EXPECT_EQ(lowercaseUtf8("МОСКВА"), "москва");
  // Lowercase letters of Latin Extended-A stay as they are.
  EXPECT_EQ(lowercaseUtf8("āčęłń"), "āčęłń");
  // As Python: 'İ' becomes 'i' + COMBINING DOT ABOVE.
  EXPECT_EQ(lowercaseUtf8("İ"), "i\u0307");
  EXPECT_EQ(lowercaseUtf8("中文"), "中文");
}

TEST(Text, Utf8Validation) {
  size_t bad = 0;
  EXPECT_TRUE(isValidUtf8("Grüße 中文 😀"));
  EXPECT_FALSE(isValidUtf8("a\xff"
                           "b",
                           &bad));
  EXPECT_EQ(bad, 1u);
  EXPECT_FALSE(isValidUtf8("ab\xc3", &bad)); // truncated
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(isValidUtf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));     // surrogate
  EXPECT_FALSE(isValidUtf8("\xf4\x90\x80\x80")); // above U+10FFFF
}

TEST(Text, PythonWhitespace) {
  EXPECT_EQ(rstripUtf8("word \t\u00a0"), "word");
  std::vector<std::string_view> words = splitWhitespace(" a\u2003b\x1f"
                                                        "c ");
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[0], "a");
  EXPECT_EQ(words[2], "c");
}

} // namespace
