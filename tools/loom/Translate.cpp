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
#include "tools/loom/Sessions.h"

#include "api/TranslateStream.h"
#include "tools/TranslateFlags.h"

#include <chrono>
#include <cstdio>

namespace loom::cli {

namespace {

struct TranslateOptions {
  std::string model;
  TranslateStreamOptions input; // path empty: stdin
  TranslatorOptions opening;
  TranslationOptions translation;
  std::string precision = "fp32";
  int timeRuns = 0;
  bool profile = false;
};

/// Each kernel's share of the decoders' time (the wall time, once per
/// decoder: with --workers the kernels of several decoders run at once);
/// what no kernel took is the host's work between steps (search,
/// bookkeeping, tokenizing, printing).
void printProfile(const Translator &translator, double wallSeconds) {
  std::vector<runtime::KernelProfile> kernels = translator.profile();
  double inKernels = 0;
  for (const runtime::KernelProfile &p : kernels)
    inKernels += p.seconds;
  double decoderSeconds = wallSeconds * translator.workers();
  std::fprintf(stderr, "%-32s %10s %10s %6s\n", "kernel", "calls", "ms",
               "share");
  for (const runtime::KernelProfile &p : kernels)
    std::fprintf(stderr, "%-32s %10lld %10.1f %5.1f%%\n", p.kernel.c_str(),
                 static_cast<long long>(p.calls), p.seconds * 1000,
                 100 * p.seconds / decoderSeconds);
  std::fprintf(stderr, "%-32s %10s %10.1f %5.1f%%\n", "(kernels)", "",
               inKernels * 1000, 100 * inKernels / decoderSeconds);
  std::fprintf(stderr, "%-32s %10d %10.1f\n", "(wall, decoders)",
               translator.workers(), wallSeconds * 1000);
}

llvm::Error translate(const TranslateOptions &o) {
  const loom::TranslationOptions &t = o.translation;
  if (t.beam < 1 || t.nbest < 1 || t.nbest > t.beam || t.batch < 1 ||
      t.maxLenRatio <= 0)
    return toError(Status::failure(
        "--beam, --batch and --max-len-ratio must be positive and --nbest "
        "between 1 and --beam"));
  auto translator =
      openModelTranslator(o.model, o.opening, o.precision, "loom translate");
  if (!translator)
    return translator.takeError();
  if (o.profile)
    (*translator)->setProfiling(true);
  auto start = std::chrono::steady_clock::now();
  TranslationTimes times;
  Status status = translateStream(
      **translator, t, o.input, stdout,
      [](const std::string &warning) {
        std::fprintf(stderr, "loom translate: warning: %s\n", warning.c_str());
      },
      o.timeRuns, &times);
  if (status.ok() && o.profile)
    printProfile(**translator, std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  if (status.ok() && o.timeRuns > 0)
    std::fprintf(
        stderr, "%s\n",
        translationTimesJson(times, "loom", o.opening, t, o.precision).c_str());
  return toError(status);
}

} // namespace

void addTranslateCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<TranslateOptions>();
  CLI::App *cmd = app.add_subcommand(
      "translate", "Translate sentences (stdin or --input) with a model "
                   "directory: config.pbtxt, spm.model, model.safetensors "
                   "and its compiled translate.loomx (built when stale)");
  cmd->add_option("--model", o->model, "The model directory")->required();
  addTranslateFlags(cmd, o->input, o->opening, o->translation);
  addTimeRunsFlag(cmd, o->timeRuns);
  cmd->add_flag("--profile", o->profile,
                "Print each kernel's calls and milliseconds on stderr after "
                "translating (the --time-runs included), and their share of "
                "the decoders' time (wall time x --workers)");
  CLI::Option *precision = addPrecisionOption(cmd, o->precision);
  precision->description(precision->get_description() +
                         "; the decoder compiled for it is kept as "
                         "translate.<precision>.loomx");
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = translate(*o))
      exitCode = fail("translate", std::move(err));
  });
}

} // namespace loom::cli
