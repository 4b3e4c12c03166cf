//===- Translate.cpp - `loom translate` -----------------------------------===//
//
// Translates sentences with a model directory: `config.pbtxt` (the
// TransformerConfig), `spm.model` (the SentencePiece vocabulary),
// `model.safetensors` (the parameters) and `translate.loomx` (the compiled
// decoder, rebuilt here when it is missing or stale; see ModelDir.h). The
// translating itself is the runtime's Translator, the same code that
// `loom-translate` and the C API run, so all three print the same output.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"

#include "api/TranslateStream.h"

#include <cstdio>

namespace loom::cli {

namespace {

struct TranslateOptions {
  std::string model;
  std::string input; // empty: stdin
  std::string weights;
  loom::TranslationOptions translation;
  int threads = 0;
};

llvm::Error translate(const TranslateOptions &o) {
  const loom::TranslationOptions &t = o.translation;
  if (t.beam < 1 || t.nbest < 1 || t.nbest > t.beam || t.batch < 1 ||
      t.maxLenRatio <= 0)
    return toError(Status::failure(
        "--beam, --batch and --max-len-ratio must be positive and --nbest "
        "between 1 and --beam"));
  auto config = loadConfig(o.model + "/" + kModelConfig);
  if (!config)
    return config.takeError();
  auto tokenizer =
      toExpected(text::Tokenizer::loadFile(o.model + "/" + kVocabulary));
  if (!tokenizer)
    return tokenizer.takeError();
  auto program = cachedTranslateProgram(o.model, *config, "loom translate");
  if (!program)
    return program.takeError();
  std::string weights =
      o.weights.empty() ? o.model + "/" + kModelWeights : o.weights;
  auto translator = toExpected(Translator::create(
      std::move(*program), std::move(*tokenizer), weights, o.threads));
  if (!translator)
    return translator.takeError();
  return toError(translateStream(
      **translator, t, o.input, stdout, [](const std::string &warning) {
        std::fprintf(stderr, "loom translate: warning: %s\n", warning.c_str());
      }));
}

} // namespace

void addTranslateCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<TranslateOptions>();
  CLI::App *cmd = app.add_subcommand(
      "translate", "Translate sentences (stdin or --input) with a model "
                   "directory: config.pbtxt, spm.model, model.safetensors "
                   "and its compiled translate.loomx (built when stale)");
  cmd->add_option("--model", o->model, "The model directory")->required();
  cmd->add_option("--input", o->input,
                  "Sentences, one per line (default: "
                  "stdin)");
  cmd->add_option("--weights", o->weights,
                  "Parameters to use instead of the directory's "
                  "model.safetensors");
  cmd->add_option("--beam", o->translation.beam, "Beam size (1: greedy)")
      ->capture_default_str();
  cmd->add_option("--alpha", o->translation.alpha,
                  "Length penalty ((5 + len) / 6)^alpha")
      ->capture_default_str();
  cmd->add_option("--max-len-ratio", o->translation.maxLenRatio,
                  "Longest output, as a multiple of the source's length")
      ->capture_default_str();
  cmd->add_option("--nbest", o->translation.nbest,
                  "Translations printed per sentence")
      ->capture_default_str();
  cmd->add_option("--batch", o->translation.batch, "Sentences decoded together")
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
