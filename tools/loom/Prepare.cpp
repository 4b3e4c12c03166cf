//===- Prepare.cpp - `loom prepare` ---------------------------------------===//
//
// Everything training needs, in one folder that trains where the compiler is
// not (api/train/Prepared.h lists its files): the vocabulary trained on the
// corpus, the config, @train_step compiled for the batch bounds, the
// schedule and the target, the decoder for the same target, and
// `loom-train` with its helpers. Then
//
//   DIR/loom-train --train SRC TGT --valid SRC TGT --epochs N
//
// trains into DIR, exactly as `loom train` with the same options would.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"
#include "tools/loom/Sessions.h"
#include "tools/loom/TrainingProgram.h"

#include "abi/CpuFeatures.h"
#include "api/Translator.h"
#include "api/train/Curves.h"
#include "api/train/Prepared.h"
#include "codegen/cuda/CudaExecutableWriter.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/text_format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace loom::cli {

namespace {

struct PrepareOptions {
  ModelOptions model;
  std::vector<std::string> train;
  std::string out;
  int64_t vocabSize = 0;
  train::RunSettings run;
  std::string device = "cpu";
  std::string cpu = "native";
  std::string cudaArch = "sm_90";
  bool dataParallel = false;
  double bucketMb = 25;
};

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error prepare(const PrepareOptions &o) {
  const train::RunSettings &run = o.run;
  if (run.maxTokens < 16 || run.maxSentences < 1 || run.warmup < 1 ||
      !(run.lrScale > 0) || !(run.clipNorm >= 0) ||
      !std::isfinite(run.lrScale) || !std::isfinite(run.clipNorm))
    return error("--max-tokens (>= 16), --max-sentences, --warmup and "
                 "--lr-scale must be positive and --clip-norm not negative, "
                 "all finite");
  auto bucket = bucketBytes(o.bucketMb);
  if (!bucket)
    return bucket.takeError();
  if (o.vocabSize < 0 || o.vocabSize > kMaxVocab)
    return error(llvm::formatv("--vocab-size must be in [5, {0}], got {1}",
                               kMaxVocab, o.vocabSize));
  if (o.device != "cpu" && o.device != "cuda")
    return error("unknown --device '" + o.device +
                 "'; a folder is prepared for 'cpu' or 'cuda'");
  CodeTarget target;
  if (o.device == "cuda") {
    if (o.cpu != abi::kNativeCpuLevel)
      return error("--cpu applies to --device cpu only");
    if (!isCudaArch(o.cudaArch))
      return error("unknown --cuda-arch '" + o.cudaArch +
                   "'; the choices are " + cudaArchList());
    target.cudaArch = o.cudaArch;
  } else {
    if (o.cudaArch != CudaExecutableOptions().arch)
      return error("--cuda-arch applies to --device cuda only");
    if (!abi::isCpuLevel(o.cpu))
      return error("unknown --cpu '" + o.cpu + "'; the choices are " +
                   abi::cpuLevelList());
    target.cpu = o.cpu;
  }
  if (llvm::Error err = checkOutputDir(o.out, "--out"))
    return err;
  for (const std::string &file : o.train)
    if (llvm::Error err = checkInputFile(file, "--train"))
      return err;
  std::error_code ec;
  if (std::filesystem::exists(o.out, ec) &&
      !std::filesystem::is_empty(o.out, ec))
    return error("'" + o.out +
                 "' is not empty; prepare into a new or empty folder");
  auto trainer = programBesideLoom("loom-train");
  if (!trainer)
    return trainer.takeError();
  auto plot = programBesideLoom("loom-plot");
  if (!plot)
    return plot.takeError();
  auto shim = toExpected(text::sentencePieceModulePath());
  if (!shim)
    return shim.takeError();

  auto loaded = o.model.load();
  if (!loaded)
    return loaded.takeError();
  TransformerConfig config = *loaded;
  auto tokenizer = trainVocabulary(
      o.train, o.vocabSize > 0 ? o.vocabSize : config.tgt_vocab(), run.seed);
  if (!tokenizer)
    return tokenizer.takeError();
  if (llvm::Error err = fitVocabulary(config, *tokenizer))
    return err;
  if (run.maxTokens < config.max_len())
    return error(llvm::formatv(
        "--max-tokens {0} is less than the model's max_len {1}: a batch "
        "must fit the longest sentence",
        run.maxTokens, config.max_len()));

  auto start = std::chrono::steady_clock::now();
  auto trainExe = compileExecutable(
      config, trainingPipeline(config, run, o.dataParallel, *bucket), target);
  if (!trainExe)
    return trainExe.takeError();
  auto translateExe = compileTranslateExecutable(config, target);
  if (!translateExe)
    return translateExe.takeError();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  // Everything was made; only now is the folder written.
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  train::PreparedFolderParts parts;
  parts.tokenizer = &*tokenizer;
  parts.configText = configText;
  parts.trainExecutable = &*trainExe;
  parts.translateExecutable = &*translateExe;
  parts.trainer = *trainer;
  parts.plotter = *plot;
  parts.tokenizerModule = *shim;
  parts.settings.run = run;
  parts.settings.dataParallel = o.dataParallel;
  parts.settings.bucketMb = o.bucketMb;
  parts.settings.device = o.device;
  parts.settings.target = target.name();
  parts.settings.translateExecutable = translateExecutableName(target);
  if (llvm::Error err = toError(train::writePreparedFolder(o.out, parts)))
    return err;
  std::printf("prepared %s: d_model %lld, %lld+%lld layers, train.loomx for "
              "%s (%d pieces, %lld tokens and %lld sentences a batch) "
              "compiled in %.1fs\n"
              "train with: %s/loom-train --train SRC TGT [--valid SRC TGT] "
              "--epochs N\n",
              o.out.c_str(), (long long)config.d_model(),
              (long long)config.encoder_layers(),
              (long long)config.decoder_layers(), target.name().c_str(),
              tokenizer->vocabSize(), (long long)run.maxTokens,
              (long long)run.maxSentences, seconds, o.out.c_str());
  return llvm::Error::success();
}

} // namespace

void addPrepareCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<PrepareOptions>();
  CLI::App *cmd = app.add_subcommand(
      "prepare", "Write a folder that trains without the compiler: the "
                 "vocabulary, the config, the compiled training step and "
                 "loom-train");
  o->model.addTo(cmd);
  cmd->add_option("--train", o->train,
                  "The training corpus the vocabulary is trained on: SRC TGT")
      ->expected(2)
      ->required();
  cmd->add_option("--out", o->out, "The folder to write")->required();
  cmd->add_option("--vocab-size", o->vocabSize,
                  "SentencePiece pieces (default: the config's tgt_vocab)");
  cmd->add_option("--seed", o->run.seed,
                  "Seeds the vocabulary (loom-train --seed seeds the rest)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", o->run.maxTokens,
                  "Padded tokens per batch and side")
      ->capture_default_str();
  cmd->add_option("--max-sentences", o->run.maxSentences, "Sentences per batch")
      ->capture_default_str();
  cmd->add_option("--warmup", o->run.warmup, "Warm-up steps of the schedule")
      ->capture_default_str();
  cmd->add_option("--lr-scale", o->run.lrScale,
                  "lr = scale * d_model^-0.5 * min(step^-0.5, step * "
                  "warmup^-1.5)")
      ->capture_default_str();
  cmd->add_option("--clip-norm", o->run.clipNorm,
                  "Clip the global gradient norm (0: no clipping)")
      ->capture_default_str();
  addTrainingPrecisionOption(cmd, o->run.precision);
  cmd->add_option("--device", o->device,
                  "What it trains on: cpu, or cuda (a GPU of --cuda-arch, "
                  "which this machine need not have)")
      ->capture_default_str();
  cmd->add_option("--cpu", o->cpu,
                  "The CPUs it must run on: native (this one) or "
                  "x86-64-v2, x86-64-v3, x86-64-v4")
      ->capture_default_str();
  cmd->add_option("--cuda-arch", o->cudaArch,
                  "With --device cuda: sm_80, sm_86, sm_89 or sm_90")
      ->capture_default_str();
  cmd->add_flag("--data-parallel", o->dataParallel,
                "Compile for a job of several processes (mpirun -np N "
                "loom-train), gradients summed across them");
  cmd->add_option("--bucket-mb", o->bucketMb,
                  "With --data-parallel: MiB of gradients per all-reduce")
      ->capture_default_str();
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = prepare(*o))
      exitCode = fail("prepare", std::move(err));
  });
}

} // namespace loom::cli
