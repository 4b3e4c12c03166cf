//===- TrainingProgram.cpp - What a run compiles before it trains ---------===//

#include "tools/loom/TrainingProgram.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#include <google/protobuf/text_format.h>

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

llvm::Error checkCompiledSettings(const train::RunSettings &s,
                                  int64_t vocabSize, double bucketMb) {
  if (s.maxTokens < 16 || s.maxSentences < 1 || s.warmup < 1 ||
      !(s.lrScale > 0) || s.clipNorm < 0)
    return error("--max-tokens (>= 16), --max-sentences, --warmup and "
                 "--lr-scale must be positive; --clip-norm must not be "
                 "negative");
  if (!std::isfinite(s.lrScale) || !std::isfinite(s.clipNorm))
    return error("--lr-scale and --clip-norm must be finite numbers");
  if (llvm::Expected<int64_t> bucket = bucketBytes(bucketMb); !bucket)
    return bucket.takeError();
  if (vocabSize < 0 || vocabSize > kMaxVocab)
    return error(llvm::formatv("--vocab-size must be in [5, {0}], got {1}",
                               kMaxVocab, vocabSize));
  return llvm::Error::success();
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
  pipeline.training.precision = settings.precision;
  pipeline.training.dataParallel = dataParallel;
  pipeline.training.bucketBytes = bucketBytes;
  return pipeline;
}

Status CompilingSource::open(const std::string &dir, bool resumed,
                             const train::RunSettings &settings,
                             runtime::Collectives *job) {
  if (resumed) {
    auto loaded = loadConfig(dir + "/config.pbtxt");
    if (!loaded)
      return toStatus(loaded.takeError());
    modelConfig = *loaded;
    ErrorOr<text::Tokenizer> spm =
        text::Tokenizer::loadFile(dir + "/spm.model");
    if (!spm)
      return spm.status();
    vocabulary = std::move(*spm);
  } else {
    auto loaded = model.load();
    if (!loaded)
      return toStatus(loaded.takeError());
    modelConfig = *loaded;
    // One vocabulary for both languages, as large as the config's target
    // vocabulary unless --vocab-size says otherwise. Rank 0 trains it;
    // every rank takes it.
    if (!job || job->rank() == 0) {
      auto spm = trainVocabulary(
          trainFiles, vocabSize > 0 ? vocabSize : modelConfig.tgt_vocab(),
          settings.seed);
      if (!spm)
        return toStatus(spm.takeError());
      vocabulary = std::move(*spm);
    }
    LOOM_RETURN_IF_ERROR(train::shareVocabulary(job, vocabulary));
    LOOM_RETURN_IF_ERROR(toStatus(fitVocabulary(modelConfig, *vocabulary)));
  }
  google::protobuf::TextFormat::PrintToString(modelConfig, &text);
  return Status::success();
}

ErrorOr<std::unique_ptr<runtime::Session>>
CompilingSource::session(const train::RunSettings &settings,
                         std::shared_ptr<runtime::Device> device,
                         bool dataParallel) {
  // @train_step (and the validation entries) for these batches.
  CompilePipelineOptions pipeline =
      trainingPipeline(modelConfig, settings, dataParallel,
                       llvm::cantFail(bucketBytes(bucketMb)));
  auto start = std::chrono::steady_clock::now();
  auto exe = compileExecutable(modelConfig, pipeline, codeTargetOf(*device));
  if (!exe)
    return toStatus(exe.takeError());
  auto session = loadSession(std::move(*exe), std::move(device));
  if (!session)
    return toStatus(session.takeError());
  compileSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return std::move(*session);
}

Status CompilingSource::writeModelFiles(const std::string &dir, bool newRun) {
  if (newRun)
    LOOM_RETURN_IF_ERROR(train::writeRunDirectory(dir, *vocabulary, text));
  // The decoder `loom translate` and `loom export` use, compiled now so the
  // directory translates without compiling (and is rebuilt if stale).
  auto start = std::chrono::steady_clock::now();
  LOOM_RETURN_IF_ERROR(toStatus(writeTranslateExecutable(dir, modelConfig)));
  compileSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Status::success();
}

std::string CompilingSource::describe(runtime::Session &session,
                                      const runtime::Collectives *job) const {
  std::string where =
      cpuThreads(session) > 0
          ? llvm::formatv("this CPU in {0:f1}s; {1} threads", compileSeconds,
                          cpuThreads(session))
                .str()
          : llvm::formatv("{0} in {1:f1}s", session.device().description(),
                          compileSeconds)
                .str();
  if (job)
    where += llvm::formatv("; {0} ranks ({1}), gradients in all-reduces of "
                           "{2} MiB",
                           job->size(), job->description(), bucketMb)
                 .str();
  return llvm::formatv("model: d_model {0}, {1} heads, {2}+{3} layers, {4} "
                       "parameters; compiled for {5}",
                       modelConfig.d_model(), modelConfig.heads(),
                       modelConfig.encoder_layers(),
                       modelConfig.decoder_layers(),
                       session.program().parameterCount(), where)
      .str();
}

std::string CompilingSource::plotScript() const {
  auto script = programBesideLoom("loom-plot");
  if (!script) {
    llvm::consumeError(script.takeError());
    return "";
  }
  return *script;
}

} // namespace loom::cli
