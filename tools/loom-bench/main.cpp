//===- main.cpp - loom-bench: timing a compiled model without the compiler ===//
//
// Times an executable that `loom compile` wrote, on random batches, and
// prints the record `loom bench` prints (api/bench/ModelBench.h), without
// its compile time. It links only the runtime, so it runs where no LLVM is
// installed: a GPU machine with the driver alone, through the device bundle.
//
//   loom-bench train  --executable base-cuda.loomx --batch 32
//   loom-bench decode --executable base-cuda.loomx --beam 4
//
// The parameters are the model's initial ones (seed 1, as `loom bench`
// draws them), or --weights.
//
//===----------------------------------------------------------------------===//

#include "api/bench/ModelBench.h"
#include "runtime/Program.h"
#include "runtime/Weights.h"
#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"

#include "CLI/CLI.hpp"

#include <google/protobuf/text_format.h>

#include <cstdio>

using namespace loom;

namespace {

struct Options {
  bench::ModelBenchOptions run;
  std::string executable, weights, device;
  int threads = 0;
};

Status benchExecutable(Options o) {
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::load(o.executable);
  if (!program)
    return program.status().withContext(o.executable);
  const runtime::Executable &exe = (*program)->executable();
  TransformerConfig config;
  if (!google::protobuf::TextFormat::ParseFromString(exe.config_text(),
                                                     &config))
    return Status::failure(o.executable + ": its model config does not parse",
                           ErrorCode::InvalidArgument);
  const std::string &precision = exe.cpu_target().linear_precision();
  o.run.precision = precision.empty() ? "fp32" : precision;
  LOOM_RETURN_IF_ERROR(bench::checkModelBench(o.run, config));
  int64_t rows = bench::benchRows(o.run), len = bench::benchLen(o.run);
  if (rows > exe.max_batch() || len > exe.max_len() ||
      rows * len > exe.max_tokens())
    return Status::failure(
        o.executable + " holds at most " + std::to_string(exe.max_batch()) +
            " rows of " + std::to_string(exe.max_len()) + " tokens, " +
            std::to_string(exe.max_tokens()) +
            " tokens in all; this run needs " + std::to_string(rows) +
            " rows of " + std::to_string(len) + " (" +
            std::to_string(rows * len) +
            " tokens; compile it with larger --max-batch, --max-len, "
            "--max-tokens)",
        ErrorCode::InvalidArgument);
  if (o.device.empty())
    o.device = exe.target() == runtime::Executable::CUDA ? "cuda" : "cpu";
  ErrorOr<std::shared_ptr<runtime::Device>> device =
      runtime::openDevice(o.device, o.threads);
  if (!device)
    return device.status().withContext("--device " + o.device);
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, *device);
  if (!session)
    return session.status().withContext(o.executable);
  LOOM_RETURN_IF_ERROR(o.weights.empty()
                           ? runtime::initParameters(**session, /*seed=*/1)
                           : runtime::loadParametersFile(**session, o.weights));
  ErrorOr<nlohmann::json> record =
      bench::runModelBench(**session, config, o.run);
  if (!record)
    return record.status();
  std::printf("%s\n", record->dump().c_str());
  return Status::success();
}

} // namespace

int main(int argc, char **argv) {
  skipLibraryDestructorsOnExit();
  CLI::App app{"Time a compiled Loom model (train steps, or greedy or beam "
               "decoding) without the compiler"};
  Options o;
  app.add_option("mode", o.run.mode, "train or decode")
      ->required()
      ->check(CLI::IsMember({"train", "decode"}));
  app.add_option("--executable", o.executable,
                 "The executable `loom compile` wrote")
      ->required();
  app.add_option("--weights", o.weights,
                 "Parameters (safetensors) instead of the initial ones");
  app.add_option("--batch", o.run.batch, "Sentence pairs per step")
      ->capture_default_str();
  app.add_option("--src-len", o.run.srcLen, "Source tokens per sentence")
      ->capture_default_str();
  app.add_option("--tgt-len", o.run.tgtLen,
                 "Target tokens per sentence (decode: tokens generated)")
      ->capture_default_str();
  app.add_option("--beam", o.run.beam,
                 "decode: hypotheses per sentence (1: greedy)")
      ->capture_default_str();
  app.add_option("--steps", o.run.steps, "Timed steps")->capture_default_str();
  app.add_option("--warmup", o.run.warmup, "Untimed steps first")
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  app.add_option("--device", o.device,
                 "Where the model runs: cpu, or cuda (cuda:N for GPU N); by "
                 "default the executable's target");
  app.add_flag("--profile", o.run.profile,
               "Print the time per kernel to stderr");
  makeStrict(app, "loom-bench");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return usageExit(app, e);
  }
  if (Status done = benchExecutable(o); !done.ok()) {
    std::fprintf(stderr, "loom-bench: error: %s\n", done.message().c_str());
    return 1;
  }
  return 0;
}
