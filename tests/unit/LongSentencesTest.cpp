//===- LongSentencesTest.cpp - Sources longer than the model takes --------===//
//
// Where a long source is cut (api/LongSentences.h): after a clause-like
// unit where one is in reach, else after a comma, else at a word start, and
// inside a word only when nothing else keeps a part within the limit; every
// part within the limit, and the parts together the whole. And how the
// parts' translations are joined.
//
//===----------------------------------------------------------------------===//

#include "api/LongSentences.h"

#include <gtest/gtest.h>

using namespace loom;

namespace {

/// Ids 0..n-1 standing for `pieces`.
struct Pieces {
  std::vector<std::string> pieces;
  std::vector<int32_t> ids() const {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < pieces.size(); ++i)
      ids.push_back(int32_t(i));
    return ids;
  }
  std::vector<size_t> cuts(size_t maxPart) const {
    return splitPoints(ids(), maxPart,
                       [&](int32_t id) { return pieces.at(size_t(id)); });
  }
};

const std::string W = "\xE2\x96\x81"; // SentencePiece's word start

TEST(LongSentences, AFittingSourceIsNotCut) {
  Pieces p{{W + "A", W + "b", "."}};
  EXPECT_TRUE(p.cuts(3).empty());
  EXPECT_TRUE(p.cuts(10).empty());
}

// The header's example: "A b c. D e, f g h." in parts of at most 6.
TEST(LongSentences, CutsAfterAClauseThenAfterAComma) {
  Pieces p{{W + "A", W + "b", W + "c", ".", W + "D", W + "e", ",", W + "f",
            W + "g", W + "h", "."}};
  EXPECT_EQ(p.cuts(6), (std::vector<size_t>{4, 7}));
}

TEST(LongSentences, TheLastClauseEndInReachWins) {
  // Two sentence ends within the first 8 pieces: the later one.
  Pieces p{{W + "A", ".", W + "B", W + "c", "!", W + "D", W + "e", W + "f",
            W + "g", W + "h"}};
  EXPECT_EQ(p.cuts(8), (std::vector<size_t>{5}));
}

TEST(LongSentences, AMarkInsideAWordIsNoClauseEnd) {
  // "3.5" is pieces "▁3" "." "5": no word starts after the ".", so the cut
  // goes at the last word start in reach (before "▁z"), not after ".".
  Pieces p{{W + "x", W + "3", ".", "5", W + "y", W + "z", W + "w"}};
  EXPECT_EQ(p.cuts(5), (std::vector<size_t>{5}));
}

TEST(LongSentences, AClosingQuoteAfterTheMarkStillEndsTheClause) {
  Pieces p{{W + "He", W + "said", W + "\"go.\"", W + "Then", W + "he",
            W + "went", W + "home"}};
  EXPECT_EQ(p.cuts(5), (std::vector<size_t>{3}));
}

TEST(LongSentences, FullWidthMarksEndAClauseWithoutASpace) {
  Pieces p{{W + "\xE4\xBD\xA0", "\xE5\xA5\xBD", "\xE3\x80\x82", "\xE6\x88\x91",
            "\xE4\xBB\xAC", "\xE5\x8E\xBB"}};
  EXPECT_EQ(p.cuts(4), (std::vector<size_t>{3}));
}

TEST(LongSentences, ALongWordIsCutInsideOnlyWhenNothingElseFits) {
  // One word of ten pieces: parts of 4, 4 and 2.
  Pieces p;
  p.pieces.push_back(W + "a");
  for (int i = 0; i < 9; ++i)
    p.pieces.push_back("b");
  EXPECT_EQ(p.cuts(4), (std::vector<size_t>{4, 8}));
}

TEST(LongSentences, EveryPartFitsAndThePartsAreTheWhole) {
  // A long mixed text, cut with several limits.
  Pieces p;
  const char *words[] = {"the", "cat", ",", "a", "dog", ".", "x", "y", "z"};
  for (int i = 0; i < 200; ++i) {
    std::string w = words[(i * 7) % 9];
    p.pieces.push_back(w == "," || w == "." ? w : W + w);
  }
  for (size_t limit : {1, 2, 3, 7, 16, 63, 199}) {
    SCOPED_TRACE(limit);
    std::vector<size_t> cuts = p.cuts(limit);
    cuts.push_back(p.pieces.size());
    size_t start = 0;
    for (size_t cut : cuts) {
      EXPECT_GT(cut, start);
      EXPECT_LE(cut - start, limit);
      start = cut;
    }
    EXPECT_EQ(start, p.pieces.size());
  }
}

TEST(LongSentences, PartsJoinRankByRank) {
  std::vector<std::vector<Translation>> parts = {
      {{"Ein Hund.", -0.5, -1.0, 3}, {"Hund.", -0.7, -1.4, 2}},
      {{"", -0.1, -0.2, 0}, {"x", -0.3, -0.6, 1}},
      {{"Eine Katze.", -0.25, -0.5, 3}}};
  std::vector<Translation> joined = joinParts(parts);
  ASSERT_EQ(joined.size(), 1u) << "as many ranks as the part with fewest";
  EXPECT_EQ(joined[0].text, "Ein Hund. Eine Katze.");
  EXPECT_DOUBLE_EQ(joined[0].score, -0.85);
  EXPECT_DOUBLE_EQ(joined[0].logProb, -1.7);
  EXPECT_EQ(joined[0].tokens, 6);
  parts.pop_back();
  joined = joinParts(parts);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[1].text, "Hund. x");
}

TEST(LongSentences, SentencesTakeTheirUnitsInOrder) {
  std::vector<std::vector<Translation>> units = {
      {{"a", -1, -1, 1}}, {{"b", -2, -2, 1}}, {{"c", -3, -3, 1}}};
  // A blank sentence (no unit), one of one unit, one of two.
  std::vector<std::vector<Translation>> sentences =
      joinSentences(units, {0, 1, 2});
  ASSERT_EQ(sentences.size(), 3u);
  EXPECT_TRUE(sentences[0].empty());
  ASSERT_EQ(sentences[1].size(), 1u);
  EXPECT_EQ(sentences[1][0].text, "a");
  ASSERT_EQ(sentences[2].size(), 1u);
  EXPECT_EQ(sentences[2][0].text, "b c");
  EXPECT_DOUBLE_EQ(sentences[2][0].logProb, -5);
}

} // namespace
