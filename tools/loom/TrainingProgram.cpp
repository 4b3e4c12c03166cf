//===- TrainingProgram.cpp - What a run compiles before it trains ---------===//

#include "tools/loom/TrainingProgram.h"
#include "tools/loom/Common.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cstdio>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<text::Tokenizer>
trainVocabulary(const std::vector<std::string> &files, int64_t vocabSize,
                uint64_t seed) {
  text::TokenizerTrainOptions options;
  options.vocabSize = int32_t(vocabSize);
  options.seed = uint32_t(seed);
  auto start = std::chrono::steady_clock::now();
  auto spm = text::Tokenizer::train(files, options);
  if (!spm)
    return error("training the SentencePiece vocabulary: " + spm.error());
  std::printf(
      "vocabulary: %d SentencePiece pieces (unigram, joint) in %.1fs\n",
      spm->vocabSize(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  return std::move(*spm);
}

llvm::Error fitVocabulary(TransformerConfig &config,
                          const text::Tokenizer &tokenizer) {
  config.set_src_vocab(tokenizer.vocabSize());
  config.set_tgt_vocab(tokenizer.vocabSize());
  return validateConfig(config);
}

CompilePipelineOptions trainingPipeline(const TransformerConfig &config,
                                        const train::RunSettings &settings,
                                        bool dataParallel,
                                        int64_t bucketBytes) {
  CompilePipelineOptions pipeline = pipelineFor(
      config, settings.maxTokens, config.max_len(), settings.maxSentences);
  pipeline.training.warmup = settings.warmup;
  pipeline.training.lrScale = settings.lrScale;
  pipeline.training.clipNorm = settings.clipNorm;
  pipeline.training.dataParallel = dataParallel;
  pipeline.training.bucketBytes = bucketBytes;
  return pipeline;
}

} // namespace loom::cli
