//===- ModelDir.cpp - The executable a model directory keeps --------------===//

#include "tools/loom/ModelDir.h"
#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "abi/ModelAbi.h"
#include "abi/Version.h"
#include "api/Translator.h"
#include "runtime/cpu/CpuFeatures.h"

#include <google/protobuf/text_format.h>

#include <cstdio>
#include <filesystem>

namespace loom::cli {

llvm::Expected<runtime::Executable>
compileTranslateExecutable(const TransformerConfig &config,
                           const CodeTarget &target) {
  int64_t limit = config.max_len();
  int64_t rows = kTranslateBatch * kTranslateBeam;
  return compileExecutable(
      config, pipelineFor(config, rows * limit, limit, rows), target);
}

std::string translateExecutableName(const CodeTarget &target) {
  if (!target.cuda() && target.precision != "fp32")
    return "translate." + target.precision + ".loomx";
  if (!target.cuda())
    return kTranslateExecutable;
  return "translate." + target.cudaArch + ".loomx";
}

std::string staleReason(const runtime::Executable &exe,
                        const TransformerConfig &config,
                        const CodeTarget &target) {
  std::string configText;
  google::protobuf::TextFormat::PrintToString(config, &configText);
  if (exe.loom_version() != kLoomVersion)
    return "it was compiled by Loom " +
           (exe.loom_version().empty() ? std::string("of another release")
                                       : exe.loom_version()) +
           ", this is " + kLoomVersion;
  if (exe.config_text() != configText)
    return "it was compiled for another config";
  // Smaller bounds than translating needs would refuse valid batches.
  int64_t limit = config.max_len(), rows = kTranslateBatch * kTranslateBeam;
  if (exe.max_tokens() != rows * limit || exe.max_len() != limit ||
      exe.max_batch() != rows)
    return "it was compiled for other bounds (max-tokens " +
           std::to_string(exe.max_tokens()) + ", max-len " +
           std::to_string(exe.max_len()) + ", max-batch " +
           std::to_string(exe.max_batch()) + ")";
  if (target.cuda()) {
    if (exe.target() != runtime::Executable::CUDA ||
        exe.cuda_target().arch() != target.cudaArch)
      return "it was not compiled for " + target.cudaArch;
  } else {
    if (exe.target() != runtime::Executable::CPU)
      return "it was not compiled for a CPU";
    if (exe.cpu_target().level() != target.cpu)
      return "it was compiled for --cpu " + exe.cpu_target().level() +
             ", not " + target.cpu;
    if (Status status = cpu::checkCpuTarget(exe.cpu_target()); !status.ok())
      return status.message();
    std::string precision = exe.cpu_target().linear_precision();
    if (precision.empty())
      precision = "fp32";
    if (precision != target.precision)
      return "it multiplies in " + precision + ", not " + target.precision;
  }
  // One from before @decode_step_logits still translates, but its searches
  // write and read a log-softmax the new one does without; one from before
  // @decode_step_align cannot return alignments.
  for (const char *entry : {abi::kEncode, abi::kDecodeStep,
                            abi::kDecodeStepLogits, abi::kDecodeStepAlign}) {
    bool found = false;
    for (const runtime::EntryPoint &e : exe.entry_points())
      found |= e.name() == entry;
    if (!found)
      return std::string("it has no @") + entry;
  }
  // One from before per-sentence starts translates, but no sentence can
  // join its running batches (`loom serve`'s in-flight batching).
  std::string start = std::string(abi::kDecodeStep) + "/input/" + abi::kStart;
  bool takesStart = false;
  for (const runtime::Buffer &b : exe.buffers())
    takesStart |= b.name() == start;
  if (!takesStart)
    return std::string("its @") + abi::kDecodeStep +
           " takes no per-sentence start";
  return "";
}

llvm::Error writeTranslateExecutable(const std::string &dir,
                                     const TransformerConfig &config) {
  auto exe = compileTranslateExecutable(config, CodeTarget());
  if (!exe)
    return exe.takeError();
  return toError(saveExecutable(dir + "/" + kTranslateExecutable, *exe));
}

llvm::Expected<std::shared_ptr<const runtime::Program>>
cachedTranslateProgram(const std::string &dir, const TransformerConfig &config,
                       llvm::StringRef command, const CodeTarget &target) {
  std::string path = dir + "/" + translateExecutableName(target);
  std::string why;
  if (auto cached = runtime::Program::load(path)) {
    why = staleReason((*cached)->executable(), config, target);
    if (why.empty())
      return std::move(*cached);
  } else if (cached.code() == ErrorCode::NotFound) {
    why = "there is none yet";
  } else {
    why = cached.error();
  }
  std::fprintf(stderr, "%s: note: compiling %s (%s)\n", command.str().c_str(),
               path.c_str(), why.c_str());
  auto exe = compileTranslateExecutable(config, target);
  if (!exe)
    return exe.takeError();
  // A folder `loom export` wrote ships its decoder, compiled for the CPUs
  // or precision it was exported for: replacing it with this machine's
  // would break the folder where it is meant to run.
  std::error_code ec;
  if (std::filesystem::exists(dir + "/loom-translate", ec))
    std::fprintf(stderr,
                 "%s: note: not kept: '%s' is an exported translator folder, "
                 "whose %s is the one it ships\n",
                 command.str().c_str(), dir.c_str(),
                 translateExecutableName(target).c_str());
  else if (Status saved = saveExecutable(path, *exe); !saved.ok())
    std::fprintf(stderr, "%s: note: cannot keep it: %s\n",
                 command.str().c_str(), saved.message().c_str());
  return toExpected(runtime::Program::create(std::move(*exe)));
}

llvm::Expected<std::unique_ptr<Translator>>
openModelTranslator(const std::string &dir, const TranslatorOptions &opening,
                    const std::string &precision, llvm::StringRef command) {
  std::shared_ptr<runtime::Device> device;
  CodeTarget target;
  if (!opening.device.empty()) {
    auto opened = openCommandDevice(opening.device, opening.threads);
    if (!opened)
      return opened.takeError();
    device = std::move(*opened);
    target = codeTargetOf(*device);
  }
  target.precision = precision;
  auto config = loadConfig(dir + "/" + kModelConfig);
  if (!config)
    return config.takeError();
  auto tokenizer =
      toExpected(text::Tokenizer::loadFile(dir + "/" + kVocabulary));
  if (!tokenizer)
    return tokenizer.takeError();
  auto program = cachedTranslateProgram(dir, *config, command, target);
  if (!program)
    return program.takeError();
  std::string weights =
      opening.weights.empty() ? dir + "/" + kModelWeights : opening.weights;
  // One device per worker (the one opened above serves a single worker).
  std::vector<std::shared_ptr<runtime::Device>> devices;
  if (device && opening.workers == 1) {
    devices.push_back(std::move(device));
  } else {
    auto opened = toExpected(Translator::openDevicesFor(**program, opening));
    if (!opened)
      return opened.takeError();
    devices = std::move(*opened);
  }
  return toExpected(Translator::create(
      std::move(*program), std::move(*tokenizer), weights, std::move(devices)));
}

} // namespace loom::cli
