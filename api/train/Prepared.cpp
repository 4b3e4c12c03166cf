//===- Prepared.cpp - A folder prepared for training ----------------------===//

#include "api/train/Prepared.h"

#include "abi/ModelAbi.h"
#include "api/Translator.h"
#include "runtime/AtomicFile.h"

#include "nlohmann/json.hpp"

#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <unistd.h>

namespace loom::train {

namespace {

Status invalid(const std::string &message) {
  return Status::failure(message, ErrorCode::InvalidArgument);
}

ErrorOr<std::string> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::failure("cannot read '" + path + "'", ErrorCode::NotFound);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// `text` parsed as a config and printed back: the form the executable and
/// checkpoints record, so that two spellings of one config compare equal.
ErrorOr<std::string> normalizedConfig(const std::string &text,
                                      TransformerConfig &config) {
  if (!google::protobuf::TextFormat::ParseFromString(text, &config))
    return invalid("the config does not parse");
  std::string printed;
  google::protobuf::TextFormat::PrintToString(config, &printed);
  return printed;
}

} // namespace

Status writePreparedSettings(const std::string &dir,
                             const PreparedSettings &s) {
  nlohmann::json j;
  j["format"] = 1;
  j["max_tokens"] = s.run.maxTokens;
  j["max_sentences"] = s.run.maxSentences;
  j["warmup"] = s.run.warmup;
  j["lr_scale"] = s.run.lrScale;
  j["clip_norm"] = s.run.clipNorm;
  j["precision"] = s.run.precision;
  j["data_parallel"] = s.dataParallel;
  j["bucket_mb"] = s.bucketMb;
  j["device"] = s.device;
  j["target"] = s.target;
  j["translate_executable"] = s.translateExecutable;
  j["vocabulary_checksum"] = s.vocabularyChecksum;
  std::string text = j.dump(1) + "\n";
  return writeFileAtomically(dir + "/" + kPreparedFile,
                             {BytePiece{text.data(), text.size()}});
}

ErrorOr<PreparedFolder> openPrepared(const std::string &dir) {
  PreparedFolder p;
  p.dir = dir;
  std::string settingsPath = dir + "/" + kPreparedFile;
  ErrorOr<std::string> settingsText = readFile(settingsPath);
  if (!settingsText)
    return Status::failure("'" + dir +
                               "' is not a folder `loom prepare` wrote (no " +
                               kPreparedFile + ")",
                           ErrorCode::NotFound);
  try {
    nlohmann::json j = nlohmann::json::parse(*settingsText);
    if (j.at("format").get<int>() != 1)
      return invalid("'" + settingsPath + "' is of another format");
    p.settings.run.maxTokens = j.at("max_tokens").get<int64_t>();
    p.settings.run.maxSentences = j.at("max_sentences").get<int64_t>();
    p.settings.run.warmup = j.at("warmup").get<int64_t>();
    p.settings.run.lrScale = j.at("lr_scale").get<double>();
    p.settings.run.clipNorm = j.at("clip_norm").get<double>();
    // Folders prepared before precision was recorded train in fp32.
    p.settings.run.precision = j.value("precision", std::string("fp32"));
    p.settings.dataParallel = j.at("data_parallel").get<bool>();
    p.settings.bucketMb = j.at("bucket_mb").get<double>();
    p.settings.device = j.at("device").get<std::string>();
    p.settings.target = j.at("target").get<std::string>();
    p.settings.translateExecutable =
        j.at("translate_executable").get<std::string>();
    p.settings.vocabularyChecksum =
        j.at("vocabulary_checksum").get<std::string>();
  } catch (const nlohmann::json::exception &e) {
    return Status::failure("'" + settingsPath + "' is damaged: " + e.what(),
                           ErrorCode::Corrupt);
  }
  if (p.settings.run.maxTokens < 16 || p.settings.run.maxSentences < 1 ||
      p.settings.run.warmup < 1 || !(p.settings.run.lrScale > 0) ||
      !(p.settings.run.clipNorm >= 0) ||
      (p.settings.run.precision != "fp32" &&
       p.settings.run.precision != "bf16") ||
      p.settings.translateExecutable.find('/') != std::string::npos)
    return Status::failure("'" + settingsPath + "' holds settings out of range",
                           ErrorCode::Corrupt);

  std::string configPath = dir + "/" + kModelConfig;
  ErrorOr<std::string> configText = readFile(configPath);
  if (!configText)
    return configText.status();
  ErrorOr<std::string> config = normalizedConfig(*configText, p.config);
  if (!config)
    return config.status().withContext(configPath);
  p.configText = *config;

  std::string vocabularyPath = dir + "/" + kVocabulary;
  ErrorOr<text::Tokenizer> tokenizer =
      text::Tokenizer::loadFile(vocabularyPath);
  if (!tokenizer)
    return tokenizer.status().withContext(vocabularyPath);
  if (vocabularyChecksum(*tokenizer) != p.settings.vocabularyChecksum)
    return invalid("'" + vocabularyPath +
                   "' is not the vocabulary this folder was prepared with");
  if (tokenizer->vocabSize() > p.config.src_vocab() ||
      tokenizer->vocabSize() > p.config.tgt_vocab())
    return invalid("'" + vocabularyPath + "' has " +
                   std::to_string(tokenizer->vocabSize()) +
                   " pieces, more than the config's vocabularies");
  p.tokenizerStorage = std::move(*tokenizer);

  p.trainPath = dir + "/" + kTrainExecutable;
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::load(p.trainPath);
  if (!program)
    return program.status().withContext(p.trainPath);
  TransformerConfig compiled;
  ErrorOr<std::string> compiledText =
      normalizedConfig((*program)->executable().config_text(), compiled);
  if (!compiledText || *compiledText != p.configText)
    return invalid("'" + p.trainPath +
                   "' was compiled for another config "
                   "than '" +
                   configPath + "'; prepare the folder again");
  if (!(*program)->hasEntry(abi::kTrainStep))
    return invalid("'" + p.trainPath + "' has no @" + abi::kTrainStep +
                   "; it is not a training executable");
  p.trainProgram = std::move(*program);
  return p;
}

Status writePreparedFolder(const std::string &dir,
                           const PreparedFolderParts &parts) {
  std::error_code ec;
  std::filesystem::create_directories(dir + "/lib", ec);
  if (ec)
    return Status::failure("cannot create '" + dir + "/lib': " + ec.message(),
                           ErrorCode::Io);
  LOOM_RETURN_IF_ERROR(
      writeRunDirectory(dir, *parts.tokenizer, parts.configText));
  LOOM_RETURN_IF_ERROR(
      saveExecutable(dir + "/" + kTrainExecutable, *parts.trainExecutable));
  LOOM_RETURN_IF_ERROR(
      saveExecutable(dir + "/" + parts.settings.translateExecutable,
                     *parts.translateExecutable));
  std::string module =
      std::filesystem::path(parts.tokenizerModule).filename().string();
  for (auto [from, to, executable] :
       {std::tuple{parts.trainer, std::string("loom-train"), true},
        std::tuple{parts.plotter, std::string("loom-plot"), true},
        std::tuple{parts.tokenizerModule, "lib/" + module, false}})
    LOOM_RETURN_IF_ERROR(copyFileAtomically(from, dir + "/" + to, executable));
  PreparedSettings settings = parts.settings;
  settings.vocabularyChecksum = vocabularyChecksum(*parts.tokenizer);
  return writePreparedSettings(dir, settings);
}

Status copyPreparedModel(const PreparedFolder &prepared,
                         const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::failure("cannot create '" + dir + "': " + ec.message(),
                           ErrorCode::Io);
  std::vector<std::string> names = {kModelConfig, kVocabulary};
  if (!prepared.settings.translateExecutable.empty())
    names.push_back(prepared.settings.translateExecutable);
  for (const std::string &name : names)
    LOOM_RETURN_IF_ERROR(
        copyFileAtomically(prepared.dir + "/" + name, dir + "/" + name));
  return Status::success();
}

std::string PreparedSource::defaultDevice() const {
  return prepared.settings.device;
}

std::set<std::string> PreparedSource::compiledSettings() const {
  return {"--max-tokens", "--max-sentences", "--warmup", "--lr-scale",
          "--clip-norm"};
}

Status PreparedSource::checkJob(const runtime::Collectives *job) const {
  if (job && !prepared.settings.dataParallel)
    return invalid("'" + prepared.dir +
                   "' was prepared for one process; prepare it with "
                   "--data-parallel to train as a job of " +
                   std::to_string(job->size()) + " ranks");
  if (!job && prepared.settings.dataParallel)
    return invalid("'" + prepared.dir +
                   "' was prepared for a data-parallel job; run it under "
                   "mpirun with two or more ranks");
  return Status::success();
}

bool PreparedSource::isHome(const std::string &dir) const {
  std::error_code ec;
  return dir == prepared.dir ||
         std::filesystem::equivalent(dir, prepared.dir, ec);
}

Status PreparedSource::open(const std::string &, bool, const RunSettings &,
                            runtime::Collectives *) {
  // The folder is the model, new run or resumed: a checkpoint of another
  // config or vocabulary is refused when the run resumes (resumeRun).
  return Status::success();
}

ErrorOr<std::unique_ptr<runtime::Session>>
PreparedSource::session(const RunSettings &,
                        std::shared_ptr<runtime::Device> device, bool) {
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(prepared.trainProgram, std::move(device));
  if (!session)
    return session.status().withContext(prepared.trainPath);
  return session;
}

Status PreparedSource::writeModelFiles(const std::string &dir, bool newRun) {
  // A new run elsewhere than the prepared folder gets the files that make
  // it a model directory (`loom translate --model DIR` reads them).
  if (!newRun || isHome(dir))
    return Status::success();
  return copyPreparedModel(prepared, dir);
}

std::string PreparedSource::describe(runtime::Session &session,
                                     const runtime::Collectives *job) const {
  std::string line =
      "model: " + std::to_string(prepared.trainProgram->parameterCount()) +
      " parameters; " + session.device().description() + "; prepared in " +
      prepared.dir;
  if (job)
    line += "; " + std::to_string(job->size()) + " ranks (" +
            job->description() + ")";
  return line;
}

std::string PreparedSource::plotScript() const {
  std::string script = prepared.dir + "/loom-plot";
  return ::access(script.c_str(), X_OK) == 0 ? script : std::string();
}

} // namespace loom::train
