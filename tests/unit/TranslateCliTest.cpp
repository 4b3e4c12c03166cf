//===- TranslateCliTest.cpp - `loom translate` on a model directory -------===//
//
// Builds a model directory (a SentencePiece vocabulary trained on generated
// text, a tiny config, random weights), then runs the `loom` binary: one
// output line per input line in input order, empty lines kept empty, long
// lines refused or translated in parts (--split-long), batches by tokens,
// n-best lines, and clear refusals. The C API
// (include/loom/loom.h, libloom.so) on the same directory gives what the
// command prints, reports errors as codes, and may be shared by threads.
//
//===----------------------------------------------------------------------===//

#include "loom/loom.h"
#include "loom/loom.hpp"

#include "frontend/InterpretedModel.h"
#include "runtime/Safetensors.h"
#include "text/Tokenizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace loom;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string &path, const std::string &content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line))
    lines.push_back(line);
  return lines;
}

class TranslateCli : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // Per process: ctest runs each test of this suite in a process of its
    // own, at the same time.
    dir = ::testing::TempDir() + "/translate-cli-" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    // A vocabulary from generated sentences.
    std::mt19937_64 rng(3);
    const char *words[] = {"the",   "a",     "dog",   "runs",  "cat",
                           "eine",  "Katze", "läuft", "Hund",  "über",
                           "grass", "green", "red",   "house", "Haus"};
    std::string corpus;
    for (int i = 0; i < 400; ++i) {
      int n = 3 + int(rng() % 8);
      for (int j = 0; j < n; ++j)
        corpus += std::string(j ? " " : "") + words[rng() % 15];
      corpus += ".\n";
    }
    writeFile(dir + "/corpus.txt", corpus);
    text::TokenizerTrainOptions options;
    options.vocabSize = 40;
    auto tokenizer = text::Tokenizer::train({dir + "/corpus.txt"}, options);
    ASSERT_TRUE(bool(tokenizer)) << tokenizer.error();
    Status savedVocabulary = tokenizer->saveFile(dir + "/spm.model");
    ASSERT_TRUE(savedVocabulary.ok()) << savedVocabulary.message();
    int64_t vocab = tokenizer->vocabSize();
    writeFile(dir + "/config.pbtxt",
              "d_model: 32 heads: 2 d_ff: 64 encoder_layers: 2 "
              "decoder_layers: 2 src_vocab: " +
                  std::to_string(vocab) +
                  " tgt_vocab: " + std::to_string(vocab) + " max_len: 24\n");
    // Random weights with every parameter of the tiny model.
    std::map<std::string, std::vector<int64_t>> shapes = {
        {"src_embed.weight", {vocab, 32}},
        {"tgt_embed.weight", {vocab, 32}},
        {"generator.weight", {vocab, 32}},
        {"generator.bias", {vocab}}};
    for (const char *side : {"encoder", "decoder"})
      for (int l = 0; l < 2; ++l) {
        std::string p = std::string(side) + ".layers." + std::to_string(l);
        std::vector<std::string> attns = {"self_attn"};
        if (std::string(side) == "decoder")
          attns.push_back("multihead_attn");
        for (const std::string &a : attns) {
          shapes[p + "." + a + ".in_proj_weight"] = {96, 32};
          shapes[p + "." + a + ".in_proj_bias"] = {96};
          shapes[p + "." + a + ".out_proj.weight"] = {32, 32};
          shapes[p + "." + a + ".out_proj.bias"] = {32};
        }
        shapes[p + ".linear1.weight"] = {64, 32};
        shapes[p + ".linear1.bias"] = {64};
        shapes[p + ".linear2.weight"] = {32, 64};
        shapes[p + ".linear2.bias"] = {32};
        for (int n = 1; n <= (std::string(side) == "decoder" ? 3 : 2); ++n) {
          shapes[p + ".norm" + std::to_string(n) + ".weight"] = {32};
          shapes[p + ".norm" + std::to_string(n) + ".bias"] = {32};
        }
      }
    SafeTensorFile file;
    for (auto &[name, value] : initialParameters(shapes, 7)) {
      std::vector<double> data = value.data;
      // Biases away from zero so that the outputs depend on them too.
      std::normal_distribution<double> normal(0, 0.3);
      for (double &x : data)
        x += normal(rng);
      auto tensor = fromDoubles(data, value.shape, "F32");
      ASSERT_TRUE(bool(tensor)) << tensor.error();
      file.tensors[name] = *tensor;
    }
    Status savedWeights = saveSafetensors(dir + "/model.safetensors", file);
    ASSERT_TRUE(savedWeights.ok()) << savedWeights.message();
  }

  static void TearDownTestSuite() { std::filesystem::remove_all(dir); }

public:
  /// Runs `loom translate` on `input`; returns its exit code.
  int translate(const std::string &input, const std::string &flags,
                std::string &out, std::string &err) {
    writeFile(dir + "/in.txt", input);
    std::string command = std::string(LOOM_BINARY) + " translate --model " +
                          dir + " --input " + dir + "/in.txt --threads 1 " +
                          flags + " >" + dir + "/out.txt 2>" + dir + "/err.txt";
    int status = std::system(command.c_str());
    out = readFile(dir + "/out.txt");
    err = readFile(dir + "/err.txt");
    return WEXITSTATUS(status);
  }

protected:
  static std::string dir;
};

std::string TranslateCli::dir;

TEST_F(TranslateCli, OneLineOutPerLineInAndInputOrder) {
  std::string longLine;
  for (int i = 0; i < 40; ++i)
    longLine += "the red house ";
  std::vector<std::string> inputs = {"the dog runs.", "", "eine Katze läuft.",
                                     longLine, "a cat."};
  std::string input;
  for (const std::string &line : inputs)
    input += line + "\n";
  std::string out, err;
  // Longer than the model's 24 positions: refused, naming it and the way.
  EXPECT_NE(translate(input, "--beam 3", out, err), 0);
  EXPECT_NE(err.find("sentence 4 has"), std::string::npos) << err;
  EXPECT_NE(err.find("--split-long"), std::string::npos) << err;
  EXPECT_EQ(out, "");
  ASSERT_EQ(translate(input, "--beam 3 --split-long", out, err), 0) << err;
  std::vector<std::string> together = splitLines(out);
  ASSERT_EQ(together.size(), inputs.size()) << out;
  EXPECT_EQ(together[1], "");
  EXPECT_NE(err.find("line 4 is longer"), std::string::npos) << err;
  // Each sentence alone gives what it got in the sorted, batched run, by
  // sentences and by tokens.
  for (const char *batching : {"", " --batch 2", " --batch-tokens 30"}) {
    SCOPED_TRACE(batching);
    std::string flags = std::string("--beam 3 --split-long") + batching;
    if (*batching) {
      std::string again;
      ASSERT_EQ(translate(input, flags, again, err), 0) << err;
      EXPECT_EQ(again, out);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].empty())
        continue;
      std::string alone, ignored;
      ASSERT_EQ(translate(inputs[i] + "\n", flags, alone, ignored), 0);
      EXPECT_EQ(splitLines(alone).at(0), together[i]) << "line " << i + 1;
    }
  }
}

// A line of two sentences that each fit, but not together, is cut between
// them: its translation is theirs, joined.
TEST_F(TranslateCli, ALongLineIsCutAtItsSentenceEnd) {
  const std::string first = "the dog runs over the green grass.",
                    second = "eine Katze läuft über das rote Haus.";
  auto vocabulary = text::Tokenizer::loadFile(dir + "/spm.model");
  ASSERT_TRUE(bool(vocabulary)) << vocabulary.error();
  auto tokens = [&](const std::string &s) {
    auto ids = vocabulary->encode(s);
    return ids ? ids->size() + 1 : 0; // eos
  };
  ASSERT_LE(tokens(first), 24u);
  ASSERT_LE(tokens(second), 24u);
  ASSERT_GT(tokens(first + " " + second), 24u);
  for (const char *flags : {"--beam 1", "--beam 4 --nbest 2"}) {
    SCOPED_TRACE(flags);
    std::string apart, joined, err;
    ASSERT_EQ(translate(first + "\n" + second + "\n", flags, apart, err), 0)
        << err;
    ASSERT_EQ(translate(first + " " + second + "\n",
                        std::string(flags) + " --split-long", joined, err),
              0)
        << err;
    std::vector<std::string> a = splitLines(apart), j = splitLines(joined);
    size_t nbest = a.size() / 2;
    ASSERT_EQ(j.size(), nbest);
    for (size_t r = 0; r < nbest; ++r) {
      std::string expected = a[r];
      if (!a[nbest + r].empty())
        expected += (expected.empty() ? "" : " ") + a[nbest + r];
      EXPECT_EQ(j[r], expected) << "rank " << r;
    }
  }
  std::string out, err;
  EXPECT_NE(translate("x\n", "--batch-tokens -1", out, err), 0);
  EXPECT_NE(err.find("--batch-tokens"), std::string::npos) << err;
}

// The decoding controls from the command line (their semantics are
// DecodingTest's): a penalty of 1 is none, a maximum length bounds every
// translation, and each bad value is refused naming it.
TEST_F(TranslateCli, DecodingControlsFromTheCommandLine) {
  const std::string input = "the dog runs.\neine Katze läuft über grass.\n"
                            "\nthe green cat runs over the house.\n";
  for (const char *search : {"--beam 1", "--beam 4 --nbest 2"}) {
    SCOPED_TRACE(search);
    std::string plain, out, err;
    ASSERT_EQ(translate(input, search, plain, err), 0) << err;
    ASSERT_EQ(translate(input, std::string(search) + " --repetition-penalty 1",
                        out, err),
              0)
        << err;
    EXPECT_EQ(out, plain);
    // Every word is at least one token.
    ASSERT_EQ(
        translate(input, std::string(search) + " --max-length 2", out, err), 0)
        << err;
    for (const std::string &line : splitLines(out)) {
      std::stringstream words(line);
      std::string word;
      int count = 0;
      while (words >> word)
        ++count;
      EXPECT_LE(count, 2) << line;
    }
    for (const char *controls :
         {"--no-repeat-ngram-size 2 --repetition-penalty 1.3",
          "--min-length 3 --forbid Haus --forbid \"the dog\""}) {
      ASSERT_EQ(
          translate(input, std::string(search) + " " + controls, out, err), 0)
          << controls << ": " << err;
      EXPECT_EQ(splitLines(out).size(), splitLines(plain).size());
    }
  }
  // Sampling: top-k 1 is the search; the same seed draws the same.
  std::string greedy, sampled, again, err;
  ASSERT_EQ(translate(input, "--beam 1", greedy, err), 0) << err;
  ASSERT_EQ(
      translate(input, "--beam 1 --sampling-topk 1 --seed 9", sampled, err), 0)
      << err;
  EXPECT_EQ(sampled, greedy);
  for (const char *flags : {"--beam 1 --sampling-topk 0 --seed 9",
                            "--beam 1 --sampling-topk 5 --sampling-topp 0.8 "
                            "--sampling-temperature 1.3 --seed 3"}) {
    ASSERT_EQ(translate(input, flags, sampled, err), 0) << err;
    ASSERT_EQ(translate(input, flags, again, err), 0) << err;
    EXPECT_EQ(again, sampled) << flags;
    EXPECT_EQ(splitLines(sampled).size(), 4u);
  }
  struct Bad {
    const char *flags, *why;
  };
  for (const Bad &bad :
       {Bad{"--sampling-topk 5", "beam 1"},
        Bad{"--beam 1 --sampling-topk 5 --sampling-topp 0", "top-p"},
        Bad{"--beam 1 --sampling-topk 5 --sampling-temperature 0",
            "temperature"},
        Bad{"--repetition-penalty 0", "repetition penalty"},
        Bad{"--no-repeat-ngram-size -1", "n-gram"},
        Bad{"--min-length 5 --max-length 3", "minimum length 5 is above"},
        Bad{"--min-length 30", "no room"}, Bad{"--forbid ' '", "blank"}}) {
    std::string out, err;
    EXPECT_NE(translate(input, bad.flags, out, err), 0) << bad.flags;
    EXPECT_NE(err.find(bad.why), std::string::npos) << bad.flags << ": " << err;
  }
}

TEST_F(TranslateCli, NBestPrintsThatManyLinesPerSentence) {
  std::string out, err;
  ASSERT_EQ(
      translate("the dog runs.\n\na cat.\n", "--beam 4 --nbest 2", out, err), 0)
      << err;
  EXPECT_EQ(splitLines(out).size(), 6u) << out;
}

TEST_F(TranslateCli, RefusesBadInput) {
  std::string out, err;
  EXPECT_NE(translate("ok\n\xff\xfe broken\n", "", out, err), 0);
  EXPECT_NE(err.find(":2: invalid UTF-8"), std::string::npos) << err;
  EXPECT_EQ(out, "");
  EXPECT_NE(translate("x\n", "--nbest 5 --beam 2", out, err), 0);
  EXPECT_NE(err.find("--nbest"), std::string::npos) << err;
  std::string command = std::string(LOOM_BINARY) + " translate --model " + dir +
                        "/absent </dev/null >/dev/null 2>" + dir + "/err.txt";
  EXPECT_NE(std::system(command.c_str()), 0);
  EXPECT_NE(readFile(dir + "/err.txt").find("absent"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

/// Every translation of `result`, sentence by sentence, best first: the
/// lines `loom translate --nbest` prints.
std::vector<std::string> texts(const loom_result *result) {
  std::vector<std::string> lines;
  for (size_t s = 0; s < loom_result_count(result); ++s)
    for (size_t r = 0; r < loom_result_nbest(result, s); ++r)
      lines.push_back(loom_result_text(result, s, r));
  return lines;
}

/// A translator of the fixture's directory with one thread; the directory's
/// translate.loomx is compiled first by running `loom translate` once.
loom_translator *openTranslator(TranslateCli &fixture, const std::string &dir) {
  std::string out, err;
  EXPECT_EQ(fixture.translate("a cat.\n", "", out, err), 0) << err;
  loom_translator_options options;
  loom_translator_options_init(&options);
  options.threads = 1;
  loom_translator *translator = nullptr;
  char *error = nullptr;
  EXPECT_EQ(loom_translator_create(dir.c_str(), &options, &translator, &error),
            LOOM_OK)
      << (error ? error : "");
  loom_free_string(error);
  return translator;
}

const char *const kSentences[] = {"the dog runs.", "",
                                  "eine Katze läuft über grass."};

TEST_F(TranslateCli, CApiTranslatesAsTheCommandDoes) {
  std::string expected, err;
  ASSERT_EQ(
      translate(std::string(kSentences[0]) + "\n\n" + kSentences[2] + "\n",
                "--beam 3 --nbest 2", expected, err),
      0)
      << err;
  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_translation_options options;
  loom_translation_options_init(&options);
  options.beam = 3;
  options.nbest = 2;
  loom_result *result = nullptr;
  char *error = nullptr;
  ASSERT_EQ(
      loom_translate(translator, kSentences, 3, &options, &result, &error),
      LOOM_OK)
      << (error ? error : "");
  EXPECT_EQ(texts(result), splitLines(expected));
  ASSERT_EQ(loom_result_count(result), 3u);
  EXPECT_EQ(loom_result_nbest(result, 1), 2u); // a blank line: n-best blanks
  EXPECT_STREQ(loom_result_text(result, 1, 0), "");
  for (size_t s : {size_t(0), size_t(2)}) {
    ASSERT_EQ(loom_result_nbest(result, s), 2u);
    EXPECT_GE(loom_result_score(result, s, 0), loom_result_score(result, s, 1));
    EXPECT_LT(loom_result_log_prob(result, s, 0), 0);
  }
  EXPECT_EQ(loom_result_text(result, 3, 0), nullptr);
  EXPECT_EQ(loom_result_text(result, 0, 2), nullptr);
  EXPECT_EQ(loom_result_score(result, 9, 0), 0);
  loom_result_free(result);

  // Batches by tokens translate alike; a long sentence is refused, or with
  // split_long translated in parts as the command does.
  options.batch_tokens = 12;
  ASSERT_EQ(
      loom_translate(translator, kSentences, 3, &options, &result, &error),
      LOOM_OK)
      << (error ? error : "");
  EXPECT_EQ(texts(result), splitLines(expected));
  loom_result_free(result);
  options.batch_tokens = 0;
  std::string longLine;
  for (int i = 0; i < 12; ++i)
    longLine += "the red house. ";
  const char *withLong[] = {kSentences[0], longLine.c_str()};
  EXPECT_EQ(loom_translate(translator, withLong, 2, &options, &result, &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error ? error : "").find("sentence 2 has"),
            std::string::npos)
      << (error ? error : "");
  loom_free_string(error);
  error = nullptr;
  options.split_long = 1;
  ASSERT_EQ(loom_translate(translator, withLong, 2, &options, &result, &error),
            LOOM_OK)
      << (error ? error : "");
  ASSERT_EQ(translate(std::string(kSentences[0]) + "\n" + longLine + "\n",
                      "--beam 3 --nbest 2 --split-long", expected, err),
            0)
      << err;
  EXPECT_EQ(texts(result), splitLines(expected));
  loom_result_free(result);
  loom_translator_free(translator);
}

// --target-prefix: a file of one line per sentence; each translation
// starts with its line's words, verbatim; an empty line is no prefix (that
// sentence translates as without the file). The C API takes the same.
TEST_F(TranslateCli, TargetPrefixesAppearVerbatim) {
  const std::string input = "the dog runs.\n\neine Katze läuft.\na cat.\n";
  writeFile(dir + "/prefix.txt", "Hund Haus\n\n\nthe red\n");
  for (const char *search : {"--beam 1", "--beam 4 --nbest 2"}) {
    SCOPED_TRACE(search);
    std::string plain, out, err;
    ASSERT_EQ(translate(input, search, plain, err), 0) << err;
    ASSERT_EQ(translate(input,
                        std::string(search) + " --target-prefix " + dir +
                            "/prefix.txt",
                        out, err),
              0)
        << err;
    std::vector<std::string> p = splitLines(plain), o = splitLines(out);
    size_t nbest =
        std::string(search).find("nbest") != std::string::npos ? 2 : 1;
    ASSERT_EQ(o.size(), 4 * nbest);
    for (size_t r = 0; r < nbest; ++r) {
      EXPECT_EQ(o[r].rfind("Hund Haus", 0), 0u) << o[r];
      EXPECT_EQ(o[nbest + r], "");
      EXPECT_EQ(o[2 * nbest + r], p[2 * nbest + r]) << "no prefix";
      EXPECT_EQ(o[3 * nbest + r].rfind("the red", 0), 0u) << o[3 * nbest + r];
    }
  }
  std::string out, err;
  writeFile(dir + "/short.txt", "Hund\n");
  EXPECT_NE(translate(input, "--target-prefix " + dir + "/short.txt", out, err),
            0);
  EXPECT_NE(err.find("1 target prefixes for 4 sentences"), std::string::npos)
      << err;

  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_translation_options options;
  loom_translation_options_init(&options);
  const char *sentences[] = {"the dog runs.", "a cat."};
  const char *prefixes[] = {"Hund Haus", ""};
  options.target_prefixes = prefixes;
  loom_result *result = nullptr;
  char *error = nullptr;
  ASSERT_EQ(loom_translate(translator, sentences, 2, &options, &result, &error),
            LOOM_OK)
      << (error ? error : "");
  EXPECT_EQ(std::string(loom_result_text(result, 0, 0)).rfind("Hund Haus", 0),
            0u);
  loom_result_free(result);
  const char *missing[] = {"Hund", nullptr};
  options.target_prefixes = missing;
  EXPECT_EQ(loom_translate(translator, sentences, 2, &options, &result, &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error ? error : "").find("target_prefixes[1]"),
            std::string::npos);
  loom_free_string(error);
  loom_translator_free(translator);
}

// The length penalty's power form at alpha 1: a score is the
// log-probability over the length (tokens, and eos where emitted), so their
// ratio is a whole number; the command takes the form by name.
TEST_F(TranslateCli, PowerLengthPenaltyIsTheMeanLogProbability) {
  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_translation_options options;
  loom_translation_options_init(&options);
  options.alpha = 1;
  options.nbest = 3;
  options.length_penalty_power = 1;
  loom_result *result = nullptr;
  char *error = nullptr;
  ASSERT_EQ(
      loom_translate(translator, kSentences, 3, &options, &result, &error),
      LOOM_OK)
      << (error ? error : "");
  for (size_t s : {size_t(0), size_t(2)})
    for (size_t r = 0; r < 3; ++r) {
      double length =
          loom_result_log_prob(result, s, r) / loom_result_score(result, s, r);
      EXPECT_NEAR(length, std::round(length), 1e-6);
      EXPECT_GE(length, 1.0);
    }
  loom_result_free(result);
  loom_translator_free(translator);
  std::string out, err;
  EXPECT_EQ(
      translate("a cat.\n", "--length-penalty-form power --alpha 1", out, err),
      0)
      << err;
  EXPECT_NE(translate("a cat.\n", "--length-penalty-form cubic", out, err), 0);
  EXPECT_NE(err.find("--length-penalty-form"), std::string::npos) << err;
}

TEST_F(TranslateCli, CApiAndCommandScorePairsAlike) {
  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  const char *sources[] = {"the dog runs.", "", "eine Katze läuft."};
  const char *targets[] = {"ein Hund läuft.", "the cat.", ""};
  loom_scoring_options options;
  loom_scoring_options_init(&options);
  options.alpha = 1;
  options.length_penalty_power = 1;
  loom_scores *scores = nullptr;
  char *error = nullptr;
  ASSERT_EQ(loom_score_pairs(translator, sources, targets, 3, &options, &scores,
                             &error),
            LOOM_OK)
      << (error ? error : "");
  ASSERT_EQ(loom_scores_count(scores), 3u);
  std::vector<double> logProbs;
  for (size_t p = 0; p < 3; ++p) {
    size_t n = loom_scores_tokens(scores, p);
    ASSERT_GE(n, 1u);
    EXPECT_STREQ(loom_scores_token(scores, p, n - 1), "</s>");
    EXPECT_EQ(loom_scores_token(scores, p, n), nullptr);
    double sum = 0;
    for (size_t t = 0; t < n; ++t) {
      double lp = loom_scores_token_log_prob(scores, p, t);
      EXPECT_LT(lp, 0);
      sum += lp;
    }
    EXPECT_NEAR(sum, loom_scores_log_prob(scores, p), 1e-9);
    // At alpha 1, len^alpha: the mean per token, eos counted.
    EXPECT_NEAR(loom_scores_score(scores, p),
                loom_scores_log_prob(scores, p) / double(n), 1e-9);
    logProbs.push_back(loom_scores_log_prob(scores, p));
  }
  // A blank target is eos alone.
  EXPECT_EQ(loom_scores_tokens(scores, 2), 1u);
  loom_scores_free(scores);

  // The command prints the same sums, one line per pair.
  writeFile(dir + "/src.txt", "the dog runs.\n\neine Katze läuft.\n");
  writeFile(dir + "/tgt.txt", "ein Hund läuft.\nthe cat.\n\n");
  std::string command = std::string(LOOM_BINARY) + " score-pairs --model " +
                        dir + " --source " + dir + "/src.txt --target " + dir +
                        "/tgt.txt --threads 1 >" + dir + "/scores.txt 2>" +
                        dir + "/err.txt";
  ASSERT_EQ(std::system(command.c_str()), 0) << readFile(dir + "/err.txt");
  std::vector<std::string> lines = splitLines(readFile(dir + "/scores.txt"));
  ASSERT_EQ(lines.size(), 3u);
  for (size_t p = 0; p < 3; ++p)
    EXPECT_NEAR(std::stod(lines[p]), logProbs[p], 1e-12) << lines[p];

  // Refusals: a NULL target, a target longer than the model decodes.
  const char *null[] = {nullptr};
  EXPECT_EQ(
      loom_score_pairs(translator, sources, null, 1, nullptr, &scores, &error),
      LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("pair 1"), std::string::npos) << error;
  loom_free_string(error);
  std::string longTarget;
  for (int i = 0; i < 40; ++i)
    longTarget += "Haus ";
  const char *tooLong[] = {longTarget.c_str()};
  EXPECT_EQ(loom_score_pairs(translator, sources, tooLong, 1, nullptr, &scores,
                             &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("the target of pair 1 has"),
            std::string::npos)
      << error;
  loom_free_string(error);
  // A source too long is refused as scoring's, not translating's, error:
  // there is no splitting a pair.
  EXPECT_EQ(loom_score_pairs(translator, tooLong, targets, 1, nullptr, &scores,
                             &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("the source of pair 1 has"),
            std::string::npos)
      << error;
  EXPECT_EQ(std::string(error).find("split"), std::string::npos) << error;
  loom_free_string(error);
  options.alpha = -1;
  EXPECT_EQ(loom_score_pairs(translator, sources, targets, 3, &options, &scores,
                             &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("alpha"), std::string::npos) << error;
  loom_free_string(error);
  EXPECT_EQ(scores, nullptr);
  loom_translator_free(translator);

  // The command refuses files that do not pair up.
  writeFile(dir + "/tgt.txt", "ein Hund läuft.\n");
  command = std::string(LOOM_BINARY) + " score-pairs --model " + dir +
            " --source " + dir + "/src.txt --target " + dir + "/tgt.txt >" +
            dir + "/scores.txt 2>" + dir + "/err.txt";
  int status = std::system(command.c_str());
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(readFile(dir + "/err.txt").find("has 3 lines"), std::string::npos)
      << readFile(dir + "/err.txt");
  EXPECT_EQ(readFile(dir + "/scores.txt"), "");
}

TEST_F(TranslateCli, CppWrapperScoresWhatItTranslated) {
  std::string out, err;
  ASSERT_EQ(translate("a cat.\n", "", out, err), 0) << err; // compiles
  loom::api::Translator translator(dir, 1);
  auto defaults = loom::api::Translator::defaults();
  defaults.beam = 1;
  defaults.alpha = 0;
  std::vector<std::string> sources = {"the dog runs.", "a red house."};
  auto translated = translator.translate(sources, defaults);
  ASSERT_EQ(translated.size(), 2u);
  std::vector<std::string> targets = {translated[0][0].text,
                                      translated[1][0].text};
  auto scoring = loom::api::Translator::scoringDefaults();
  scoring.alpha = 0;
  auto scores = translator.scorePairs(sources, targets, scoring);
  ASSERT_EQ(scores.size(), 2u);
  for (size_t p = 0; p < 2; ++p) {
    ASSERT_FALSE(scores[p].tokens.empty());
    EXPECT_EQ(scores[p].tokens.back(), "</s>");
    EXPECT_EQ(scores[p].tokens.size(), scores[p].tokenLogProbs.size());
    // Random weights seldom choose eos: a translation cut at its length
    // limit has none, and scoring adds its log-probability last.
    double withoutEos = scores[p].logProb - scores[p].tokenLogProbs.back();
    EXPECT_TRUE(std::abs(scores[p].logProb - translated[p][0].logProb) < 1e-4 ||
                std::abs(withoutEos - translated[p][0].logProb) < 1e-4)
        << targets[p] << ": " << scores[p].logProb << " vs "
        << translated[p][0].logProb;
  }
  // The message of a refusal comes through.
  try {
    translator.scorePairs({"a"}, {std::string(200, 'a')});
    ADD_FAILURE() << "a target longer than the model decodes was scored";
  } catch (const loom::api::Error &e) {
    EXPECT_EQ(e.status(), LOOM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("the target of pair 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(translator.scorePairs({"a"}, {"b", "c"}), loom::api::Error);
}

TEST_F(TranslateCli, AlignmentsPointIntoTheSourceAndChangeNothingElse) {
  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_translation_options options;
  loom_translation_options_init(&options);
  options.nbest = 2;
  loom_result *plain = nullptr, *aligned = nullptr;
  char *error = nullptr;
  ASSERT_EQ(loom_translate(translator, kSentences, 3, &options, &plain, &error),
            LOOM_OK)
      << (error ? error : "");
  options.alignments = 1;
  ASSERT_EQ(
      loom_translate(translator, kSentences, 3, &options, &aligned, &error),
      LOOM_OK)
      << (error ? error : "");
  // "the dog runs." and "eine Katze läuft über grass." in pieces.
  for (size_t s : {size_t(0), size_t(2)})
    for (size_t r = 0; r < 2; ++r) {
      // The same translations and scores, with or without alignments.
      EXPECT_STREQ(loom_result_text(aligned, s, r),
                   loom_result_text(plain, s, r));
      EXPECT_NEAR(loom_result_score(aligned, s, r),
                  loom_result_score(plain, s, r), 1e-5);
      size_t n = loom_result_alignment_count(aligned, s, r);
      EXPECT_EQ(loom_result_alignment_count(plain, s, r), 0u);
      int lastTarget = -1;
      for (size_t p = 0; p < n; ++p) {
        int source = -1, target = -1;
        ASSERT_EQ(loom_result_alignment(aligned, s, r, p, &source, &target), 1);
        EXPECT_GE(source, 0);
        EXPECT_LT(source, 40); // the sentence's pieces, at most
        EXPECT_GT(target, lastTarget);
        lastTarget = target;
      }
      int untouched = 7;
      EXPECT_EQ(loom_result_alignment(aligned, s, r, n, &untouched, &untouched),
                0);
      EXPECT_EQ(untouched, 7);
    }
  loom_result_free(plain);
  loom_result_free(aligned);
  // The model has 2 decoder layers: 0, 1, -1 and -2 align; 2 and -3 do not.
  options.alignment_layer = -2;
  ASSERT_EQ(
      loom_translate(translator, kSentences, 3, &options, &aligned, &error),
      LOOM_OK)
      << (error ? error : "");
  loom_result_free(aligned);
  options.alignment_layer = 2;
  EXPECT_EQ(
      loom_translate(translator, kSentences, 3, &options, &aligned, &error),
      LOOM_ERROR_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("alignment layer 2"), std::string::npos)
      << error;
  loom_free_string(error);
  loom_translator_free(translator);
}

TEST_F(TranslateCli, CApiReportsErrorsAsCodesWithMessages) {
  char *error = nullptr;
  loom_translator *translator = nullptr;
  std::string absent = dir + "/absent";
  EXPECT_EQ(
      loom_translator_create(absent.c_str(), nullptr, &translator, &error),
      LOOM_ERROR_NOT_FOUND);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find(absent), std::string::npos) << error;
  loom_free_string(error);
  EXPECT_EQ(translator, nullptr);
  EXPECT_EQ(loom_translator_create(nullptr, nullptr, &translator, nullptr),
            LOOM_ERROR_INVALID_ARGUMENT);

  translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_result *result = nullptr;
  loom_translation_options options;
  loom_translation_options_init(&options);
  options.nbest = options.beam + 1;
  EXPECT_EQ(
      loom_translate(translator, kSentences, 3, &options, &result, &error),
      LOOM_ERROR_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("nbest"), std::string::npos) << error;
  loom_free_string(error);
  EXPECT_EQ(result, nullptr);
  const char *broken[] = {"ok", "\xff\xfe"};
  EXPECT_EQ(loom_translate(translator, broken, 2, nullptr, &result, &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("UTF-8"), std::string::npos) << error;
  loom_free_string(error);
  const char *null[] = {nullptr};
  EXPECT_EQ(loom_translate(translator, null, 1, nullptr, &result, nullptr),
            LOOM_ERROR_INVALID_ARGUMENT);
  // No sentences: an empty result, not an error.
  ASSERT_EQ(loom_translate(translator, nullptr, 0, nullptr, &result, nullptr),
            LOOM_OK);
  EXPECT_EQ(loom_result_count(result), 0u);
  loom_result_free(result);
  loom_translator_free(translator);
  EXPECT_STREQ(loom_status_name(LOOM_ERROR_CORRUPT), "corrupt");
  EXPECT_STRNE(loom_version(), "");
}

TEST_F(TranslateCli, CApiTranslatorIsSharedByThreads) {
  loom_translator *translator = openTranslator(*this, dir);
  ASSERT_NE(translator, nullptr);
  loom_result *alone = nullptr;
  ASSERT_EQ(loom_translate(translator, kSentences, 3, nullptr, &alone, nullptr),
            LOOM_OK);
  std::vector<std::string> expected = texts(alone);
  loom_result_free(alone);
  // Calls from four threads at once run one at a time, each as if alone.
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        loom_result *result = nullptr;
        if (loom_translate(translator, kSentences, 3, nullptr, &result,
                           nullptr) != LOOM_OK)
          return;
        got[t] = texts(result);
        loom_result_free(result);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (const std::vector<std::string> &lines : got)
    EXPECT_EQ(lines, expected);
  loom_translator_free(translator);
}

// Weights with a NaN are refused when the translator is created; finite
// weights that overflow inside the model (bos's target embedding at 3e38)
// make decoding produce NaN, which fails the call, naming the sentence,
// instead of returning empty translations.
TEST_F(TranslateCli, CApiRefusesWeightsThatGiveNaN) {
  std::string out, err;
  ASSERT_EQ(translate("a cat.\n", "", out, err), 0) << err; // the executable
  auto weights = loadSafetensors(dir + "/model.safetensors");
  ASSERT_TRUE(bool(weights)) << weights.error();
  auto writeWith = [&](const std::string &name, int64_t from, int64_t to,
                       float value) {
    SafeTensorFile file = *weights;
    for (int64_t i = from; i < to; ++i)
      std::memcpy(file.tensors.at(name).bytes.data() + 4 * i, &value, 4);
    std::string path = dir + "/changed.safetensors";
    Status saved = saveSafetensors(path, file);
    EXPECT_TRUE(saved.ok()) << saved.message();
    return path;
  };
  loom_translator_options options;
  loom_translator_options_init(&options);
  options.threads = 1;
  loom_translator *translator = nullptr;
  char *error = nullptr;

  std::string nan = writeWith("encoder.layers.0.norm2.bias", 3, 4, NAN);
  options.weights = nan.c_str();
  EXPECT_EQ(loom_translator_create(dir.c_str(), &options, &translator, &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("parameter 'encoder.layers.0.norm2.bias' "
                                    "holds NaN at element 3"),
            std::string::npos)
      << error;
  loom_free_string(error);
  EXPECT_EQ(translator, nullptr);

  // Row 2 (bos) of a [vocab, 32] table.
  std::string overflow = writeWith("tgt_embed.weight", 64, 96, 3e38f);
  options.weights = overflow.c_str();
  ASSERT_EQ(loom_translator_create(dir.c_str(), &options, &translator, &error),
            LOOM_OK)
      << (error ? error : "");
  loom_result *result = nullptr;
  EXPECT_EQ(loom_translate(translator, kSentences, 3, nullptr, &result, &error),
            LOOM_ERROR_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("@decode_step_logits produced NaN in "
                                    "'logits' for sentence"),
            std::string::npos)
      << error;
  loom_free_string(error);
  EXPECT_EQ(result, nullptr);
  loom_translator_free(translator);
}

//===----------------------------------------------------------------------===//
// The same output whatever came before
//===----------------------------------------------------------------------===//

/// Every translation of `result` with its score and log-probability, bit for
/// bit, one line each.
std::vector<std::string> textsAndScores(const loom_result *result) {
  std::vector<std::string> lines;
  char number[64];
  for (size_t s = 0; s < loom_result_count(result); ++s)
    for (size_t r = 0; r < loom_result_nbest(result, s); ++r) {
      std::snprintf(number, sizeof(number), " %a %a",
                    loom_result_score(result, s, r),
                    loom_result_log_prob(result, s, r));
      lines.push_back(loom_result_text(result, s, r) + std::string(number));
    }
  return lines;
}

// A translation depends on its input and options only: the first call of a
// process, its later calls, calls after other sentences or another search,
// and a fresh process give the same texts and (within one process) the same
// scores to the bit, at every precision this CPU runs and both searches.
// Random weights make the beams' scores close, so that any difference in
// the arithmetic shows. (Packed weights were once first used in fp32, before
// their packed copy existed: at int8, a process's first translation of a
// file differed from its later ones.)
// Two decoders translating batches side by side print what one does: the
// same texts and scores, in input order, at fp32 and int8, greedy and beam.
// They share one copy of the weights, and of what is packed from them.
TEST_F(TranslateCli, WorkersTranslateAsOneDecoderDoes) {
  std::string input;
  for (const char *sentence :
       {"the dog runs.", "eine Katze läuft über grass.", "a red house.", "",
        "the green cat runs over the house.", "Hund Haus Katze.", "grass."})
    input += std::string(sentence) + "\n";
  // One row multiplies the weights from panels, 3 x 4 rows from packed
  // copies (2 x 4 rows from panels on an AVX2 CPU, from packed copies with
  // AVX-512): both kinds, shared by the two decoders.
  for (const char *flags : {"--precision fp32 --beam 4 --nbest 2 --batch 2",
                            "--precision int8 --beam 1 --batch 2",
                            "--precision fp32 --beam 1 --batch 1",
                            "--precision int8 --beam 4 --batch 3",
                            "--precision fp32 --beam 4 --batch 3"}) {
    SCOPED_TRACE(flags);
    std::string one, two, err;
    ASSERT_EQ(translate(input, flags, one, err), 0) << err;
    ASSERT_EQ(translate(input, std::string(flags) + " --workers 2", two, err),
              0)
        << err;
    EXPECT_EQ(two, one);
    EXPECT_FALSE(one.empty());
  }
  std::string out, err;
  EXPECT_NE(translate(input, "--workers 0", out, err), 0);
  EXPECT_NE(err.find("--workers"), std::string::npos) << err;
}

TEST_F(TranslateCli, SameOutputWhateverCameBefore) {
  const char *const sentences[] = {
      "the dog runs.", "eine Katze läuft über grass.", "a red house.",
      "the green cat runs over the house.", "Hund Haus Katze."};
  const char *const others[] = {"grass.", "the the the a a a dog"};
  std::string input;
  for (const char *sentence : sentences)
    input += std::string(sentence) + "\n";
  for (const char *precision : {"fp32", "int8", "bf16"}) {
    SCOPED_TRACE(precision);
    std::string flags = std::string("--precision ") + precision +
                        " --beam 4 --nbest 4 --batch 3";
    std::string fresh, again, err;
    int status = translate(input, flags, fresh, err);
    if (std::string(precision) == "bf16" && status != 0) {
      // Refused where the CPU cannot multiply in bf16.
      EXPECT_NE(err.find("AVX512-BF16"), std::string::npos) << err;
      continue;
    }
    ASSERT_EQ(status, 0) << err;
    ASSERT_EQ(translate(input, flags, again, err), 0) << err;
    EXPECT_EQ(again, fresh) << "two processes";

    std::string executable = dir + "/translate." + precision + ".loomx";
    if (std::string(precision) == "fp32")
      executable = dir + "/translate.loomx";
    loom_translator_options options;
    loom_translator_options_init(&options);
    options.threads = 1;
    options.executable = executable.c_str();
    for (int beam : {4, 1}) {
      SCOPED_TRACE("beam " + std::to_string(beam));
      loom_translation_options search;
      loom_translation_options_init(&search);
      search.beam = beam;
      search.nbest = beam;
      search.batch = 3;
      auto run = [&](loom_translator *translator, const char *const *lines,
                     size_t count) {
        loom_result *result = nullptr;
        char *error = nullptr;
        EXPECT_EQ(
            loom_translate(translator, lines, count, &search, &result, &error),
            LOOM_OK)
            << (error ? error : "");
        loom_free_string(error);
        std::vector<std::string> got =
            result ? textsAndScores(result) : std::vector<std::string>{};
        loom_result_free(result);
        return got;
      };
      // One translator: the first call, then two more.
      loom_translator *first = nullptr;
      ASSERT_EQ(loom_translator_create(dir.c_str(), &options, &first, nullptr),
                LOOM_OK);
      std::vector<std::string> expected = run(first, sentences, 5);
      ASSERT_EQ(expected.size(), 5u * beam);
      EXPECT_EQ(run(first, sentences, 5), expected) << "second call";
      EXPECT_EQ(run(first, sentences, 5), expected) << "third call";
      loom_translator_free(first);
      // Another, after other sentences at the other search.
      loom_translator *later = nullptr;
      ASSERT_EQ(loom_translator_create(dir.c_str(), &options, &later, nullptr),
                LOOM_OK);
      loom_translation_options other = search;
      other.beam = other.nbest = beam == 1 ? 4 : 1;
      loom_result *warmUp = nullptr;
      ASSERT_EQ(loom_translate(later, others, 2, &other, &warmUp, nullptr),
                LOOM_OK);
      loom_result_free(warmUp);
      EXPECT_EQ(run(later, sentences, 5), expected) << "after other calls";
      loom_translator_free(later);
      // What the command printed, in a process of its own.
      if (beam == 4) {
        std::vector<std::string> printed;
        for (const std::string &line : expected)
          printed.push_back(
              line.substr(0, line.rfind(' ', line.rfind(' ') - 1)));
        EXPECT_EQ(splitLines(fresh), printed) << "a fresh process";
      }
    }
  }
}

} // namespace
