//===- CorpusTest.cpp - Reading parallel corpora --------------------------===//

#include "text/Corpus.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using loom::ErrorOr;
using namespace loom::text;

namespace {

/// One token per space-separated word: enough to exercise length limits
/// without a trained model.
loom::ErrorOr<std::vector<int32_t>> words(const std::string &text) {
  std::istringstream in(text);
  std::vector<int32_t> ids;
  std::string word;
  while (in >> word)
    ids.push_back(static_cast<int32_t>(word.size()));
  return ids;
}

class CorpusTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = ::testing::TempDir() + "loom-corpus-" + info->name() + "-" +
          std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0777);
  }
  void TearDown() override {
    for (const std::string &path : written)
      std::remove(path.c_str());
    ::rmdir(dir.c_str());
  }

  /// Writes `bytes` verbatim to `name` in the test's directory.
  std::string write(const std::string &name, const std::string &bytes) {
    std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    written.push_back(path);
    return path;
  }

  ErrorOr<Corpus> read(const std::string &src, const std::string &tgt,
                       CorpusOptions options = {}) {
    return readCorpus(write("src.txt", src), write("tgt.txt", tgt), words,
                      words, options);
  }

  std::string dir;
  std::vector<std::string> written;
};

TEST_F(CorpusTest, ReadsPairsAndTheirLines) {
  auto corpus = read("a b\nc\n", "x\ny z w\n", {0, /*keepText=*/true});
  ASSERT_TRUE(corpus) << corpus.error();
  ASSERT_EQ(corpus->pairs.size(), 2u);
  EXPECT_EQ(corpus->pairs[0].line, 1);
  EXPECT_EQ(corpus->pairs[0].src.size(), 2u);
  EXPECT_EQ(corpus->pairs[0].tgt.size(), 1u);
  EXPECT_EQ(corpus->pairs[1].srcText, "c");
  EXPECT_EQ(corpus->pairs[1].tgtText, "y z w");
  EXPECT_EQ(corpus->stats.lines, 2);
  EXPECT_EQ(corpus->stats.kept, 2);
  // Without keepText the sentences are not kept.
  auto idsOnly = read("a b\nc\n", "x\ny z w\n");
  ASSERT_TRUE(idsOnly);
  EXPECT_EQ(idsOnly->pairs[1].srcText, "");
}

TEST_F(CorpusTest, MismatchedLineCountsNameBothFilesAndCounts) {
  auto corpus = read("a\nb\nc\n", "x\ny\n");
  ASSERT_FALSE(corpus);
  const std::string &e = corpus.error();
  EXPECT_NE(e.find(dir + "/src.txt has 3 lines"), std::string::npos) << e;
  EXPECT_NE(e.find(dir + "/tgt.txt has 2 lines"), std::string::npos) << e;
}

TEST_F(CorpusTest, LastLineWithoutNewlineCounts) {
  auto corpus = read("a\nb", "x\ny\n");
  ASSERT_TRUE(corpus) << corpus.error();
  EXPECT_EQ(corpus->stats.lines, 2);
}

TEST_F(CorpusTest, InvalidUtf8NamesFileAndLine) {
  // Line 3 of the target holds a lone continuation byte.
  auto corpus = read("a\nb\nc\n", "x\ny\nz \x80 w\n");
  ASSERT_FALSE(corpus);
  EXPECT_NE(corpus.error().find(dir + "/tgt.txt:3: invalid UTF-8"),
            std::string::npos)
      << corpus.error();
  EXPECT_NE(corpus.error().find("0x80 at column 3"), std::string::npos)
      << corpus.error();
}

TEST_F(CorpusTest, ValidatesUtf8Strictly) {
  EXPECT_EQ(findInvalidUtf8("plain ASCII"), std::string::npos);
  EXPECT_EQ(findInvalidUtf8("Mädchen über Straße €𝄞"), std::string::npos);
  EXPECT_EQ(findInvalidUtf8("\xF4\x8F\xBF\xBF"), std::string::npos); // U+10FFFF
  EXPECT_EQ(findInvalidUtf8("\xED\x9F\xBF"), std::string::npos);     // U+D7FF
  struct Case {
    const char *bytes;
    size_t offset;
  };
  for (Case c : {
           Case{"ab\x80", 2},           // lone continuation
           Case{"\xC3", 0},             // truncated
           Case{"\xC3(", 0},            // bad continuation
           Case{"x\xC0\xAF", 1},        // overlong '/'
           Case{"\xC1\xBF", 0},         // overlong
           Case{"\xE0\x80\xAF", 0},     // overlong 3-byte
           Case{"\xF0\x80\x80\xAF", 0}, // overlong 4-byte
           Case{"\xED\xA0\x80", 0},     // surrogate U+D800
           Case{"\xED\xBF\xBF", 0},     // surrogate U+DFFF
           Case{"\xF4\x90\x80\x80", 0}, // U+110000
           Case{"\xF5\x80\x80\x80", 0}, // beyond any code point
           Case{"\xFF", 0},             // never in UTF-8
           Case{"ok \xE2\x82", 3},      // truncated euro sign
           Case{"\xF0\x9D\x84", 0},     // truncated 4-byte
       })
    EXPECT_EQ(findInvalidUtf8(c.bytes), c.offset) << c.bytes;

  // The error names the first bad line, in either file.
  auto corpus = read("a\n\xED\xA0\x80\n", "x\ny\n");
  ASSERT_FALSE(corpus);
  EXPECT_NE(corpus.error().find("src.txt:2: invalid UTF-8"), std::string::npos)
      << corpus.error();
}

TEST_F(CorpusTest, SkipsAndCountsEmptyAndLongPairs) {
  std::string src = "one two\n"   // kept
                    "   \n"       // empty source (whitespace only)
                    "a b c d e\n" // source too long
                    "three\n"     // empty target
                    "four five\n" // target too long
                    "\n"          // both empty
                    "six\n";      // kept
  std::string tgt = "eins zwei\n"
                    "leer\n"
                    "x\n"
                    "\t \n"
                    "a b c d\n"
                    "\n"
                    "sechs\n";
  CorpusOptions options;
  options.maxLen = 3;
  options.keepText = true;
  auto corpus = read(src, tgt, options);
  ASSERT_TRUE(corpus) << corpus.error();
  EXPECT_EQ(corpus->stats.lines, 7);
  EXPECT_EQ(corpus->stats.kept, 2);
  EXPECT_EQ(corpus->stats.skippedEmpty, 3);
  EXPECT_EQ(corpus->stats.skippedLong, 2);
  ASSERT_EQ(corpus->pairs.size(), 2u);
  EXPECT_EQ(corpus->pairs[0].line, 1);
  EXPECT_EQ(corpus->pairs[1].line, 7);
  EXPECT_EQ(corpus->pairs[1].tgtText, "sechs");
  EXPECT_EQ(describe(corpus->stats, 3),
            "7 lines, 2 pairs kept, 3 skipped (empty), 2 skipped (longer "
            "than 3 tokens)");

  // The limit is inclusive, and 0 means none.
  options.maxLen = 5;
  corpus = read(src, tgt, options);
  ASSERT_TRUE(corpus);
  EXPECT_EQ(corpus->stats.skippedLong, 0);
  options.maxLen = 0;
  corpus = read(src, tgt, options);
  ASSERT_TRUE(corpus);
  EXPECT_EQ(corpus->stats.kept, 4);
}

TEST_F(CorpusTest, DropsCarriageReturnsAndByteOrderMark) {
  auto corpus =
      read("\xEF\xBB\xBFHallo Welt\r\nzwei\r\n", "hello world\ntwo", {0, true});
  ASSERT_TRUE(corpus) << corpus.error();
  ASSERT_EQ(corpus->pairs.size(), 2u);
  EXPECT_EQ(corpus->pairs[0].srcText, "Hallo Welt");
  EXPECT_EQ(corpus->pairs[1].srcText, "zwei");
  EXPECT_EQ(corpus->pairs[1].tgtText, "two");

  auto lines = readLines(write("crlf.txt", "a\r\n\r\nb\r\n"));
  ASSERT_TRUE(lines);
  EXPECT_EQ(*lines, (std::vector<std::string>{"a", "", "b"}));
}

TEST_F(CorpusTest, MissingFileIsNamed) {
  auto corpus =
      readCorpus(dir + "/absent.de", write("tgt.txt", "x\n"), words, words);
  ASSERT_FALSE(corpus);
  EXPECT_NE(corpus.error().find("cannot open " + dir + "/absent.de"),
            std::string::npos)
      << corpus.error();
}

TEST_F(CorpusTest, EmptyFilesGiveAnEmptyCorpus) {
  auto corpus = read("", "");
  ASSERT_TRUE(corpus) << corpus.error();
  EXPECT_EQ(corpus->stats.lines, 0);
  EXPECT_TRUE(corpus->pairs.empty());
}

} // namespace
