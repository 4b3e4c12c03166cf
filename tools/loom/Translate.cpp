//===- Translate.cpp - `loom translate` -----------------------------------===//
//
// Translates sentences with a model directory: `config.pbtxt` (the
// TransformerConfig), `spm.model` (the SentencePiece vocabulary) and
// `model.safetensors` (the parameters), as `loom train` writes them. Lines
// come from stdin or --input; each becomes its SentencePiece ids followed by
// eos. Sentences are sorted by length into batches, beam-searched on the
// compiled CPU model, and printed in input order. An empty line gives an
// empty line; a sentence longer than the model's limit is cut, with a
// warning naming its line.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/CpuBackend.h"

#include "runtime/cpu/Decoding.h"
#include "text/Bleu.h"
#include "text/Tokenizer.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct TranslateOptions {
  std::string model;
  std::string input; // empty: stdin
  std::string weights;
  int64_t beam = 4;
  double alpha = 0.6;
  double maxLenRatio = 1.5;
  int64_t nbest = 1;
  int64_t batch = 32;
  int threads = 0;
};

llvm::Expected<std::vector<std::string>> readInput(const std::string &path) {
  std::ifstream file;
  if (!path.empty()) {
    file.open(path, std::ios::binary);
    if (!file)
      return error("cannot open '" + path + "'");
  }
  std::istream &in = path.empty() ? std::cin : file;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (!text::isValidUtf8(line))
      return error(llvm::formatv("{0}:{1}: invalid UTF-8",
                                 path.empty() ? "<stdin>" : path,
                                 lines.size() + 1));
    lines.push_back(line);
  }
  return lines;
}

llvm::Error translate(const TranslateOptions &o) {
  if (o.beam < 1 || o.nbest < 1 || o.nbest > o.beam || o.batch < 1 ||
      o.maxLenRatio <= 0)
    return error("--beam, --batch and --max-len-ratio must be positive and "
                 "--nbest between 1 and --beam");
  auto config = loadConfig(o.model + "/config.pbtxt");
  if (!config)
    return config.takeError();
  auto tokenizer = text::Tokenizer::loadFile(o.model + "/spm.model");
  if (!tokenizer)
    return error(tokenizer.error());
  auto lines = readInput(o.input);
  if (!lines)
    return lines.takeError();

  // Every sentence as ids + eos, cut to what the model was built for.
  int64_t limit = config->max_len();
  std::vector<std::vector<int32_t>> sources(lines->size());
  for (size_t i = 0; i < lines->size(); ++i) {
    if (text::splitWhitespace((*lines)[i]).empty())
      continue;
    std::vector<int32_t> ids = tokenizer->encode((*lines)[i]);
    if (int64_t(ids.size()) + 1 > limit) {
      std::fprintf(stderr,
                   "loom translate: warning: line %zu has %zu tokens; the "
                   "model takes %lld, so it is cut\n",
                   i + 1, ids.size() + 1, static_cast<long long>(limit));
      ids.resize(limit - 1);
    }
    ids.push_back(text::Tokenizer::kEos);
    sources[i] = std::move(ids);
  }

  int64_t rows = o.batch * o.beam;
  auto exe = compileCpuExecutable(
      *config, pipelineFor(*config, rows * limit, limit, rows));
  if (!exe)
    return exe.takeError();
  auto model = loadCpuModel(std::move(*exe), o.threads);
  if (!model)
    return model.takeError();
  std::string weights =
      o.weights.empty() ? o.model + "/model.safetensors" : o.weights;
  if (llvm::Error err = loadParameters(**model, weights))
    return err;

  // Similar lengths together; the output goes back to input order.
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty())
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sources[a].size() < sources[b].size();
  });
  std::vector<std::vector<std::string>> outputs(sources.size());
  for (size_t start = 0; start < order.size(); start += o.batch) {
    size_t end = std::min(order.size(), start + size_t(o.batch));
    std::vector<std::vector<int64_t>> part;
    for (size_t i = start; i < end; ++i)
      part.emplace_back(sources[order[i]].begin(), sources[order[i]].end());
    cpu::Tensor src = idsTensor(part);
    cpu::BeamOptions beam;
    beam.beam = o.beam;
    beam.alpha = o.alpha;
    beam.nbest = o.nbest;
    beam.bos = text::Tokenizer::kBos;
    beam.eos = text::Tokenizer::kEos;
    // Each sentence's own limit, so that its translation does not depend
    // on the sentences it is batched with.
    for (size_t i = start; i < end; ++i)
      beam.maxLens.push_back(std::min<int64_t>(
          limit,
          std::max<int64_t>(
              2, int64_t(o.maxLenRatio * sources[order[i]].size()) + 1)));
    auto found = cpu::beamSearch(**model, src.ref(), beam);
    if (!found)
      return error(found.error());
    for (size_t i = start; i < end; ++i)
      for (const cpu::Hypothesis &h : (*found)[i - start])
        outputs[order[i]].push_back(tokenizer->decode(h.tokens));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) {
      for (int64_t n = 0; n < o.nbest; ++n)
        std::printf("\n");
      continue;
    }
    for (const std::string &line : outputs[i])
      std::printf("%s\n", line.c_str());
  }
  return llvm::Error::success();
}

} // namespace

void addTranslateCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<TranslateOptions>();
  CLI::App *cmd = app.add_subcommand(
      "translate", "Translate sentences (stdin or --input) with a model "
                   "directory: config.pbtxt, spm.model, model.safetensors");
  cmd->add_option("--model", o->model, "The model directory")->required();
  cmd->add_option("--input", o->input,
                  "Sentences, one per line (default: "
                  "stdin)");
  cmd->add_option("--weights", o->weights,
                  "Parameters to use instead of the directory's "
                  "model.safetensors");
  cmd->add_option("--beam", o->beam, "Beam size (1: greedy)")
      ->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "Length penalty ((5 + len) / 6)^alpha")
      ->capture_default_str();
  cmd->add_option("--max-len-ratio", o->maxLenRatio,
                  "Longest output, as a multiple of the source's length")
      ->capture_default_str();
  cmd->add_option("--nbest", o->nbest, "Translations printed per sentence")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "Sentences decoded together")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = translate(*o))
      exitCode = fail("translate", std::move(err));
  });
}

} // namespace loom::cli
