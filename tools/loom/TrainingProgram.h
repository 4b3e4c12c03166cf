//===- TrainingProgram.h - What a run compiles before it trains -*- C++ -*-===//
//
// `loom train` and `loom prepare` make the same vocabulary and compile the
// same @train_step from the same options, so that training in one process
// and training with a prepared folder give the same run. `loom train` runs
// the trainer library's job (api/train/TrainingJob.h) with a CompilingSource:
// the model from a preset or config and a vocabulary trained on the corpus,
// compiled in the process.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_TRAININGPROGRAM_H
#define LOOM_TOOLS_LOOM_TRAININGPROGRAM_H

#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "api/train/TrainingJob.h"
#include "frontend/Config.h"
#include "text/Tokenizer.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace loom::cli {

/// One SentencePiece vocabulary for both languages of `files` (SRC TGT),
/// of `vocabSize` pieces, drawn with `seed`; prints its size and time.
llvm::Expected<text::Tokenizer>
trainVocabulary(const std::vector<std::string> &files, int64_t vocabSize,
                uint64_t seed);

/// Sets the config's vocabularies to the tokenizer's size and checks it.
llvm::Error fitVocabulary(TransformerConfig &config,
                          const text::Tokenizer &tokenizer);

/// Checks the settings a run compiles into @train_step and the vocabulary
/// size it trains (0: the config's), before anything is compiled; the job
/// checks the rest. Messages name `loom train`'s flags.
llvm::Error checkCompiledSettings(const train::RunSettings &settings,
                                  int64_t vocabSize, double bucketMb);

/// The pipeline that compiles @train_step (and the validation entries) for
/// the run's batch bounds and schedule; `bucketBytes` of gradients per
/// all-reduce when `dataParallel`.
CompilePipelineOptions trainingPipeline(const TransformerConfig &config,
                                        const train::RunSettings &settings,
                                        bool dataParallel, int64_t bucketBytes);

/// The model of a `loom train` run, compiled here: a new run's from `model`
/// with a vocabulary of `vocabSize` pieces (0: the config's tgt_vocab)
/// trained on `trainFiles`; a resumed run's from its directory.
class CompilingSource : public train::ModelSource {
public:
  CompilingSource(ModelOptions model, std::vector<std::string> trainFiles,
                  int64_t vocabSize, double bucketMb)
      : model(std::move(model)), trainFiles(std::move(trainFiles)),
        vocabSize(vocabSize), bucketMb(bucketMb) {}

  std::string defaultDevice() const override { return "cpu"; }
  std::set<std::string> compiledSettings() const override { return {}; }
  Status checkJob(const runtime::Collectives *) const override {
    return Status::success();
  }
  bool isHome(const std::string &) const override { return false; }
  Status open(const std::string &dir, bool resumed,
              const train::RunSettings &settings,
              runtime::Collectives *job) override;
  const TransformerConfig &config() const override { return modelConfig; }
  const std::string &configText() const override { return text; }
  const text::Tokenizer &tokenizer() const override { return *vocabulary; }
  ErrorOr<std::unique_ptr<runtime::Session>>
  session(const train::RunSettings &settings,
          std::shared_ptr<runtime::Device> device, bool dataParallel) override;
  Status writeModelFiles(const std::string &dir, bool newRun) override;
  std::string describe(runtime::Session &session,
                       const runtime::Collectives *job) const override;
  std::string plotScript() const override;

private:
  ModelOptions model;
  std::vector<std::string> trainFiles;
  int64_t vocabSize;
  /// MiB of gradients per all-reduce in a data-parallel job (checked by
  /// bucketBytes before).
  double bucketMb;
  TransformerConfig modelConfig;
  std::string text;
  std::optional<text::Tokenizer> vocabulary;
  double compileSeconds = 0;
};

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_TRAININGPROGRAM_H
