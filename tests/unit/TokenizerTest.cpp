//===- TokenizerTest.cpp - SentencePiece tokenization ---------------------===//
//
// Trains small SentencePiece models on generated English and German text.
// This executable also links the system libprotobuf (through LoomRuntime), so
// every test here also checks that the SentencePiece module, with its own
// protobuf, loads into such a process and leaves libprotobuf working.
//
//===----------------------------------------------------------------------===//

#include "text/Tokenizer.h"

#include "executable.pb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using loom::ErrorOr;
using loom::Status;
using namespace loom::text;

namespace {

const Tokenizer &tokenizerOf(const Tokenizer &t) { return t; }
template <typename Holder> const Tokenizer &tokenizerOf(const Holder &t) {
  return *t;
}

/// The ids of `s`, failing the test when the tokenizer fails.
template <typename T>
std::vector<int32_t> encodeOk(const T &tok, const std::string &s) {
  ErrorOr<std::vector<int32_t>> ids = tokenizerOf(tok).encode(s);
  EXPECT_TRUE(ids) << ids.error();
  return ids ? *ids : std::vector<int32_t>{};
}

/// The text of `ids`, failing the test when the tokenizer fails.
template <typename T>
std::string decodeOk(const T &tok, const std::vector<int32_t> &ids) {
  ErrorOr<std::string> text = tokenizerOf(tok).decode(ids);
  EXPECT_TRUE(text) << text.error();
  return text ? *text : std::string();
}

const char *const kEnglish[][5] = {
    {"A man", "A woman", "Two children", "A dog", "The old teacher"},
    {"walks", "is running", "looks", "sits", "waits"},
    {"across the street", "on the beach", "near a red car", "in the park",
     "under a big tree"},
    {".", "!", ", smiling.", "?", " today."}};

const char *const kGerman[][5] = {
    {"Ein Mann", "Eine Frau", "Zwei Mädchen", "Ein Hund", "Der ältere Lehrer"},
    {"läuft", "geht schnell", "schaut", "sitzt", "wartet"},
    {"über die Straße", "am Strand", "neben einem roten Auto", "im Park",
     "unter einem großen Baum"},
    {".", "!", ", lächelnd.", "?", " heute."}};

/// One generated sentence from `words`, e.g. "Zwei Mädchen sitzt im Park!".
template <typename Words>
std::string sentence(Words &words, std::mt19937 &rng) {
  std::string s;
  for (int slot = 0; slot < 3; ++slot) {
    if (slot)
      s += ' ';
    s += words[slot][rng() % 5];
  }
  return s + words[3][rng() % 5];
}

std::string tempDir() {
  static const std::string dir = [] {
    std::string path =
        ::testing::TempDir() + "loom-tokenizer-" + std::to_string(::getpid());
    ::mkdir(path.c_str(), 0777);
    return path;
  }();
  return dir;
}

/// Removes what the tests wrote once they have all run.
class RemoveTempDir : public ::testing::Environment {
public:
  void TearDown() override {
    for (const char *name :
         {"train.en", "train.de", "joint.model", "multi30k.en", "multi30k.de"})
      std::remove((tempDir() + "/" + name).c_str());
    ::rmdir(tempDir().c_str());
  }
};
[[maybe_unused]] ::testing::Environment *const removeTempDir =
    ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

/// Writes the generated corpus once per process: 2000 lines per language.
const std::vector<std::string> &trainingFiles() {
  static const std::vector<std::string> files = [] {
    std::string dir = tempDir();
    std::vector<std::string> paths = {dir + "/train.en", dir + "/train.de"};
    std::mt19937 rng(7);
    std::ofstream en(paths[0]), de(paths[1]);
    for (int i = 0; i < 2000; ++i) {
      en << sentence(kEnglish, rng) << "\n";
      // Some lines end in CRLF, as files from Windows do.
      de << sentence(kGerman, rng) << (i % 3 ? "\n" : "\r\n");
    }
    return paths;
  }();
  return files;
}

TokenizerTrainOptions smallOptions() {
  TokenizerTrainOptions options;
  options.vocabSize = 120;
  options.threads = 2;
  return options;
}

/// The unigram model trained on the joint corpus, trained once.
const ErrorOr<Tokenizer> &joint() {
  static const ErrorOr<Tokenizer> tokenizer =
      Tokenizer::train(trainingFiles(), smallOptions());
  return tokenizer;
}

#define ASSERT_JOINT(tok)                                                      \
  ASSERT_TRUE(joint()) << joint().error();                                     \
  const Tokenizer &tok = *joint()

const std::vector<std::string> kHeldOut = {
    "Zwei Mädchen schaut unter einem großen Baum, lächelnd.",
    "Der ältere Lehrer wartet über die Straße?",
    "Ein Hund geht schnell am Strand heute.",
    "The old teacher is running near a red car!",
    "Two children waits under a big tree, smiling.",
    "Eine Frau läuft im Park.",
};

TEST(Tokenizer, ReservesPadUnkBosEos) {
  Status loaded = loadSentencePiece();
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  ASSERT_JOINT(tok);
  EXPECT_EQ(Tokenizer::kPad, 0);
  EXPECT_EQ(Tokenizer::kUnk, 1);
  EXPECT_EQ(Tokenizer::kBos, 2);
  EXPECT_EQ(Tokenizer::kEos, 3);
  EXPECT_EQ(tok.piece(0), "<pad>");
  EXPECT_EQ(tok.piece(1), "<unk>");
  EXPECT_EQ(tok.piece(2), "<s>");
  EXPECT_EQ(tok.piece(3), "</s>");
  EXPECT_EQ(tok.vocabSize(), 120);
  EXPECT_EQ(tok.piece(tok.vocabSize()), "");
  // Text never encodes to control ids; unseen characters become unk.
  for (const std::string &s : kHeldOut)
    for (int32_t id : encodeOk(tok, s)) {
      EXPECT_GT(id, Tokenizer::kEos) << s;
      EXPECT_LT(id, tok.vocabSize()) << s;
    }
  std::vector<int32_t> ids = encodeOk(tok, "Ein 北 Hund");
  EXPECT_NE(std::find(ids.begin(), ids.end(), Tokenizer::kUnk), ids.end());
}

TEST(Tokenizer, RoundTripsHeldOutSentences) {
  ASSERT_JOINT(tok);
  for (const std::string &s : kHeldOut) {
    std::vector<int32_t> ids = encodeOk(tok, s);
    ASSERT_FALSE(ids.empty()) << s;
    // Subwords: fewer pieces than bytes, so the model learned something.
    EXPECT_LT(ids.size(), s.size()) << s;
    EXPECT_EQ(decodeOk(tok, ids), s);
  }
  EXPECT_TRUE(encodeOk(tok, "").empty());
  EXPECT_EQ(decodeOk(tok, {}), "");
}

TEST(Tokenizer, DecodeDropsControlIdsAndMapsUnknownIdsToUnk) {
  ASSERT_JOINT(tok);
  std::vector<int32_t> ids = encodeOk(tok, "Ein Hund.");
  std::vector<int32_t> framed = {Tokenizer::kBos};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(Tokenizer::kEos);
  framed.push_back(Tokenizer::kPad);
  EXPECT_EQ(decodeOk(tok, framed), "Ein Hund.");
  // SentencePiece renders unk as " ⁇ "; an id past the vocabulary decodes
  // the same way instead of failing.
  EXPECT_EQ(decodeOk(tok, {tok.vocabSize() + 5}),
            decodeOk(tok, {Tokenizer::kUnk}));
  EXPECT_EQ(decodeOk(tok, {-1}), decodeOk(tok, {Tokenizer::kUnk}));
}

TEST(Tokenizer, ModelBytesReloadToTheSameEncoding) {
  ASSERT_JOINT(tok);
  auto reloaded = Tokenizer::load(tok.modelBytes());
  ASSERT_TRUE(reloaded) << reloaded.error();
  EXPECT_EQ(reloaded->vocabSize(), tok.vocabSize());
  EXPECT_EQ(reloaded->modelBytes(), tok.modelBytes());

  std::string path = tempDir() + "/joint.model";
  Status saved = tok.saveFile(path);
  ASSERT_TRUE(saved.ok()) << saved.message();
  auto fromFile = Tokenizer::loadFile(path);
  ASSERT_TRUE(fromFile) << fromFile.error();
  for (const std::string &s : kHeldOut) {
    EXPECT_EQ(encodeOk(reloaded, s), encodeOk(tok, s)) << s;
    EXPECT_EQ(encodeOk(fromFile, s), encodeOk(tok, s)) << s;
  }
}

TEST(Tokenizer, TrainingIsReproducible) {
  ASSERT_JOINT(tok);
  auto again = Tokenizer::train(trainingFiles(), smallOptions());
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again->modelBytes(), tok.modelBytes());
}

TEST(Tokenizer, TrainsBpe) {
  ASSERT_JOINT(unigram);
  TokenizerTrainOptions options = smallOptions();
  options.modelType = "bpe";
  auto bpe = Tokenizer::train(trainingFiles(), options);
  ASSERT_TRUE(bpe) << bpe.error();
  EXPECT_EQ(bpe->piece(Tokenizer::kEos), "</s>");
  for (const std::string &s : kHeldOut)
    EXPECT_EQ(decodeOk(bpe, encodeOk(bpe, s)), s);
  EXPECT_NE(bpe->modelBytes(), unigram.modelBytes());
}

TEST(Tokenizer, EncodesFromSeveralThreads) {
  ASSERT_JOINT(tok);
  std::vector<std::vector<int32_t>> expected;
  for (const std::string &s : kHeldOut)
    expected.push_back(encodeOk(tok, s));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Tokenizer copy = tok; // copies share the model
      for (int round = 0; round < 200; ++round)
        for (size_t i = 0; i < kHeldOut.size(); ++i)
          mismatches[t] += encodeOk(copy, kHeldOut[i]) != expected[i];
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Tokenizer, ReportsErrors) {
  auto garbage = Tokenizer::load("this is not a model");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().find("cannot load SentencePiece model"),
            std::string::npos)
      << garbage.error();

  auto missing = Tokenizer::loadFile(tempDir() + "/no-such.model");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("no-such.model"), std::string::npos);

  auto noInput = Tokenizer::train({tempDir() + "/no-such.txt"}, smallOptions());
  ASSERT_FALSE(noInput);
  EXPECT_NE(noInput.error().find("no-such.txt"), std::string::npos);

  TokenizerTrainOptions options = smallOptions();
  options.modelType = "wordpiece";
  auto badType = Tokenizer::train(trainingFiles(), options);
  ASSERT_FALSE(badType);
  EXPECT_NE(badType.error().find("wordpiece"), std::string::npos);

  // More pieces than the corpus has: said in Loom's words, with the most
  // SentencePiece finds.
  options = smallOptions();
  options.vocabSize = 50000;
  auto tooBig = Tokenizer::train(trainingFiles(), options);
  ASSERT_FALSE(tooBig);
  EXPECT_NE(tooBig.error().find("is too small for a vocabulary of 50000 "
                                "pieces: it holds at most "),
            std::string::npos)
      << tooBig.error();

  // No text at all (SentencePiece crashed on all-blank lines).
  std::string blank = ::testing::TempDir() + "/blank.txt";
  std::ofstream(blank) << "\n  \n\t\r\n";
  auto noText = Tokenizer::train({blank, blank}, smallOptions());
  ASSERT_FALSE(noText);
  EXPECT_NE(noText.error().find("no text to learn a vocabulary from: " + blank +
                                ", " + blank + " are empty or only blank lines"),
            std::string::npos)
      << noText.error();
}

// The system libprotobuf keeps working beside SentencePiece's copy: a
// message round trip after a model was trained and loaded.
TEST(Tokenizer, SystemProtobufStillWorks) {
  ASSERT_JOINT(tok);
  ASSERT_GT(tok.vocabSize(), 0);
  loom::runtime::Executable exe;
  exe.set_config_text("d_model: 8");
  exe.set_code(std::string("\0\1\2", 3));
  loom::runtime::Executable merged;
  merged.MergeFrom(exe);
  std::string bytes;
  ASSERT_TRUE(merged.SerializeToString(&bytes));
  loom::runtime::Executable parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.config_text(), "d_model: 8");
  EXPECT_EQ(parsed.code(), std::string("\0\1\2", 3));
}

// On real data when it is at hand (LOOM_MULTI30K names a directory with
// train.en and train.de): the first 2000 lines of each.
TEST(Tokenizer, Multi30kSample) {
  const char *dir = std::getenv("LOOM_MULTI30K");
  if (!dir || !*dir)
    GTEST_SKIP() << "LOOM_MULTI30K not set";
  std::string out = tempDir();
  std::vector<std::string> files, samples;
  for (const char *lang : {"en", "de"}) {
    std::ifstream in(std::string(dir) + "/train." + lang);
    ASSERT_TRUE(in) << dir << "/train." << lang;
    std::string path = out + "/multi30k." + lang;
    std::ofstream sample(path);
    std::string line;
    for (int i = 0; i < 2000 && std::getline(in, line); ++i)
      sample << line << "\n";
    // Held out: lines after the sample.
    for (int i = 0; i < 20 && std::getline(in, line); ++i)
      samples.push_back(line);
    files.push_back(path);
  }
  TokenizerTrainOptions options;
  options.vocabSize = 1000;
  options.threads = 2;
  auto tok = Tokenizer::train(files, options);
  ASSERT_TRUE(tok) << tok.error();
  size_t exact = 0;
  for (const std::string &s : samples) {
    std::vector<int32_t> ids = encodeOk(tok, s);
    exact += decodeOk(tok, ids) == s;
  }
  // Unseen characters may become unk in held-out lines; nearly all of them
  // still round trip.
  EXPECT_GE(exact, samples.size() * 9 / 10);
}

} // namespace
