//===- Prepared.h - A folder prepared for training --------------*- C++ -*-===//
//
// `loom prepare` writes everything training needs into a folder, and
// `loom-train` trains with it on a machine without the compiler:
//
//   DIR/config.pbtxt     the model's config, vocabulary sizes set
//   DIR/spm.model        the vocabulary
//   DIR/train.loomx      @train_step (and the validation entries) compiled
//                        for the batch bounds, the schedule and the target
//   DIR/translate*.loomx the decoder for the same target
//   DIR/prepare.json     what train.loomx was compiled with (batch bounds,
//                        schedule, data parallelism, device, target) and
//                        the vocabulary's checksum
//   DIR/loom-train, DIR/loom-plot, DIR/lib/   the trainer and its helpers
//
// Opening a folder checks that its parts belong together: the executable
// was compiled from this config, the vocabulary is the one prepared.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_PREPARED_H
#define LOOM_API_TRAIN_PREPARED_H

#include "api/train/TrainingJob.h"
#include "runtime/Program.h"
#include "runtime/config.pb.h"
#include "text/Tokenizer.h"

#include <memory>
#include <optional>
#include <string>

namespace loom::train {

inline constexpr const char kPreparedFile[] = "prepare.json";
inline constexpr const char kTrainExecutable[] = "train.loomx";

/// What the training executable was compiled with.
struct PreparedSettings {
  /// Batch bounds and schedule (the seed is the run's, not compiled).
  RunSettings run;
  bool dataParallel = false;
  double bucketMb = 25;
  /// "cpu" or "cuda", and the CPU level or GPU architecture.
  std::string device = "cpu";
  std::string target;
  /// The translate executable's file name in the folder.
  std::string translateExecutable;
  /// The vocabulary's checksum (vocabularyChecksum).
  std::string vocabularyChecksum;
};

Status writePreparedSettings(const std::string &dir,
                             const PreparedSettings &settings);

/// What `loom prepare` puts into a folder, made beforehand.
struct PreparedFolderParts {
  const text::Tokenizer *tokenizer = nullptr;
  std::string configText;
  const runtime::Executable *trainExecutable = nullptr;
  const runtime::Executable *translateExecutable = nullptr;
  /// loom-train, loom-plot, and the tokenizer module they open.
  std::string trainer, plotter, tokenizerModule;
  /// What the training executable was compiled with; the translate
  /// executable's name and the vocabulary's checksum are filled in.
  PreparedSettings settings;
};

/// Writes a prepared folder into `dir` (new or empty), every file
/// atomically and prepare.json last: a folder without it is not a prepared
/// one, so a crash midway leaves nothing that loom-train would take.
Status writePreparedFolder(const std::string &dir,
                           const PreparedFolderParts &parts);

struct PreparedFolder {
  std::string dir;
  TransformerConfig config;
  /// The config as the executable and checkpoints record it.
  std::string configText;
  std::optional<text::Tokenizer> tokenizerStorage;
  const text::Tokenizer &tokenizer() const { return *tokenizerStorage; }
  std::shared_ptr<const runtime::Program> trainProgram;
  std::string trainPath;
  PreparedSettings settings;
};

/// Reads and cross-checks a prepared folder.
ErrorOr<PreparedFolder> openPrepared(const std::string &dir);

/// Copies what makes `prepared` a model directory (config, vocabulary,
/// translate executable) into `dir`, for a run trained elsewhere than in the
/// prepared folder.
Status copyPreparedModel(const PreparedFolder &prepared,
                         const std::string &dir);

/// A run's model from a prepared folder, for runTrainingJob: the folder's
/// config, vocabulary and @train_step, which fix the batch bounds, the
/// schedule and whether the run is one process or a data-parallel job.
class PreparedSource : public ModelSource {
public:
  explicit PreparedSource(PreparedFolder folder)
      : prepared(std::move(folder)) {}

  std::string defaultDevice() const override;
  std::set<std::string> compiledSettings() const override;
  Status checkJob(const runtime::Collectives *job) const override;
  bool isHome(const std::string &dir) const override;
  Status open(const std::string &dir, bool resumed, const RunSettings &settings,
              runtime::Collectives *job) override;
  const TransformerConfig &config() const override { return prepared.config; }
  const std::string &configText() const override { return prepared.configText; }
  const text::Tokenizer &tokenizer() const override {
    return prepared.tokenizer();
  }
  ErrorOr<std::unique_ptr<runtime::Session>>
  session(const RunSettings &settings, std::shared_ptr<runtime::Device> device,
          bool dataParallel) override;
  Status writeModelFiles(const std::string &dir, bool newRun) override;
  std::string describe(runtime::Session &session,
                       const runtime::Collectives *job) const override;
  std::string plotScript() const override;

private:
  PreparedFolder prepared;
};

} // namespace loom::train

#endif // LOOM_API_TRAIN_PREPARED_H
