//===- Export.cpp - `loom export` -----------------------------------------===//
//
// Turns a model directory into a translator folder that runs without Loom's
// compiler:
//
// api/TranslatorFolder.h lists the folder's files; this command picks the
// decoder for --cpu or --device cuda (the directory's own when current,
// else compiled here) and the weights (the directory's, or --weights). The
// folder may be copied anywhere, or to another machine of the same CPU
// class with the same shared libraries (protobuf, oneDNN, OpenBLAS,
// SentencePiece); `OUT/loom-translate < in > out` then prints what
// `loom translate --model DIR` prints.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"
#include "tools/loom/Sessions.h"

#include "abi/CpuFeatures.h"
#include "api/Translator.h"
#include "api/TranslatorFolder.h"
#include "codegen/cuda/CudaExecutableWriter.h"

#include <cstdio>
#include <filesystem>

namespace loom::cli {

namespace {

struct ExportOptions {
  std::string model;
  std::string out;
  std::string weights;
  std::string cpu = "native";
  std::string precision = "fp32";
  std::string device = "cpu";
  std::string cudaArch = "sm_90";
};

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error exportModel(const ExportOptions &o) {
  if (!abi::isCpuLevel(o.cpu))
    return error("unknown --cpu '" + o.cpu + "'; the choices are " +
                 abi::cpuLevelList());
  if (o.device != "cpu" && o.device != "cuda")
    return error("unknown --device '" + o.device +
                 "'; a translator is exported for 'cpu' or 'cuda'");
  if (!isCudaArch(o.cudaArch))
    return error("unknown --cuda-arch '" + o.cudaArch + "'; the choices are " +
                 cudaArchList());
  // The decoder's code: for the CPU --cpu names, or for a GPU (which this
  // machine need not have) of --cuda-arch.
  CodeTarget target;
  if (o.device == "cuda") {
    if (o.cpu != abi::kNativeCpuLevel)
      return error("--cpu applies to --device cpu only");
    target.cudaArch = o.cudaArch;
  } else {
    if (o.cudaArch != CudaExecutableOptions().arch)
      return error("--cuda-arch applies to --device cuda only");
    target.cpu = o.cpu;
  }
  target.precision = o.precision;
  std::error_code ec;
  if (llvm::Error err = checkOutputDir(o.out, "--out"))
    return err;
  // Not the model directory, nor any folder inside it: the folder's files
  // would land among the model's (in checkpoints/, a config.pbtxt and a
  // lib/ beside the checkpoints).
  std::filesystem::path model = std::filesystem::weakly_canonical(o.model, ec);
  std::filesystem::path out = std::filesystem::weakly_canonical(o.out, ec);
  for (std::filesystem::path at = out; !at.empty() && at != at.parent_path();
       at = at.parent_path())
    if (at == model)
      return error("--out must not be the model directory or inside it");
  auto config = loadConfig(o.model + "/" + kModelConfig);
  if (!config)
    return config.takeError();
  std::string weights =
      o.weights.empty() ? o.model + "/" + kModelWeights : o.weights;
  auto binary = programBesideLoom("loom-translate");
  if (!binary)
    return binary.takeError();
  auto server = programBesideLoom("loom-serve");
  if (!server)
    return server.takeError();
  auto shim = toExpected(text::sentencePieceModulePath());
  if (!shim)
    return shim.takeError();

  // The executable: the directory's own when it is current for the native
  // CPU or the GPU architecture, else compiled for --cpu here.
  std::shared_ptr<const runtime::Program> program;
  if (target.cuda() || o.cpu == abi::kNativeCpuLevel) {
    auto cached =
        cachedTranslateProgram(o.model, *config, "loom export", target);
    if (!cached)
      return cached.takeError();
    program = std::move(*cached);
  } else {
    auto exe = compileTranslateExecutable(*config, target);
    if (!exe)
      return exe.takeError();
    auto created = toExpected(runtime::Program::create(std::move(*exe)));
    if (!created)
      return created.takeError();
    program = std::move(*created);
  }
  TranslatorFolderParts parts;
  parts.program = program.get();
  parts.weights = weights;
  parts.vocabulary = o.model + "/" + kVocabulary;
  parts.config = o.model + "/" + kModelConfig;
  parts.translator = *binary;
  parts.server = *server;
  parts.tokenizerModule = *shim;
  auto total = toExpected(writeTranslatorFolder(o.out, parts));
  if (!total)
    return total.takeError();
  const runtime::Executable &exe = program->executable();
  std::string what =
      target.cuda() ? exe.cuda_target().arch() + ", CUDA"
                    : exe.cpu_target().level() + ", " + exe.cpu_target().cpu();
  std::printf("exported %s to %s: %.1f MiB (translate.loomx for %s)\n"
              "translate with: %s/loom-translate < input > output\n"
              "serve with: %s/loom-serve --port 8080\n",
              o.model.c_str(), o.out.c_str(), double(*total) / (1 << 20),
              what.c_str(), o.out.c_str(), o.out.c_str());
  return llvm::Error::success();
}

} // namespace

void addExportCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App *cmd = app.add_subcommand(
      "export", "Write a self-contained translator folder (loom-translate, "
                "the compiled decoder, weights, vocabulary) that runs "
                "without the compiler");
  cmd->add_option("--model", o->model, "The model directory")->required();
  cmd->add_option("-o,--out", o->out, "The folder to write")->required();
  cmd->add_option("--weights", o->weights,
                  "Parameters to ship instead of the directory's "
                  "model.safetensors");
  addPrecisionOption(cmd, o->precision);
  cmd->add_option("--cpu", o->cpu,
                  "The CPUs it must run on: native (this one) or "
                  "x86-64-v2, x86-64-v3, x86-64-v4")
      ->capture_default_str();
  cmd->add_option("--device", o->device,
                  "What it translates on: cpu, or cuda (a GPU of "
                  "--cuda-arch, which this machine need not have)")
      ->capture_default_str();
  cmd->add_option("--cuda-arch", o->cudaArch,
                  "With --device cuda: sm_80, sm_86, sm_89 or sm_90 (later "
                  "GPUs run its PTX)")
      ->capture_default_str();
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = exportModel(*o))
      exitCode = fail("export", std::move(err));
  });
}

} // namespace loom::cli
