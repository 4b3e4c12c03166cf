//===- Bench.cpp - `loom bench train|decode` ------------------------------===//
//
// Compiles the model for the device and times it (api/bench/ModelBench.h
// says what a step is and how FLOPs are counted); the record gains the
// compile time. `loom-bench` times an executable compiled earlier, with no
// compiler.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "api/bench/ModelBench.h"

#include <chrono>
#include <cstdio>

namespace loom::cli {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct BenchOptions {
  bench::ModelBenchOptions run;
  ModelOptions model;
  int threads = 0;
  std::string device = "cpu";
  std::string cachePrecision; // "": what --precision implies
};

llvm::Error bench(const BenchOptions &o) {
  auto config = o.model.load();
  if (!config)
    return config.takeError();
  if (llvm::Error err = toError(bench::checkModelBench(o.run, *config)))
    return err;
  auto device = openCommandDevice(o.device, o.threads);
  if (!device)
    return device.takeError();
  if (o.run.precision == "int8" && o.run.mode != "decode")
    return error("--precision int8 is for 'decode'; 'train' takes fp32 or "
                 "bf16");
  CodeTarget target = codeTargetOf(**device);
  target.precision = o.run.precision;
  target.cachePrecision = o.cachePrecision;
  int64_t rows = bench::benchRows(o.run), len = bench::benchLen(o.run);
  CompilePipelineOptions pipeline = pipelineFor(*config, rows * len, len, rows);
  if (o.run.mode == "train")
    pipeline.training.precision = o.run.precision;
  auto compileStart = std::chrono::steady_clock::now();
  auto exe = compileExecutable(*config, pipeline, target);
  if (!exe)
    return exe.takeError();
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();
  auto model = loadSession(std::move(*exe), *device);
  if (!model)
    return model.takeError();
  if (llvm::Error err = initParameters(**model, /*seed=*/1))
    return err;
  auto record = toExpected(bench::runModelBench(**model, *config, o.run));
  if (!record)
    return record.takeError();
  (*record)["compile_s"] = compileSeconds;
  std::printf("%s\n", record->dump().c_str());
  return llvm::Error::success();
}

} // namespace

void addBenchCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App *cmd = app.add_subcommand(
      "bench",
      "Time the compiled model: train steps, or greedy or beam decoding");
  cmd->add_option("mode", o->run.mode, "train or decode")->required();
  o->model.addTo(cmd);
  cmd->add_option("--batch", o->run.batch, "Sentence pairs per step")
      ->capture_default_str();
  cmd->add_option("--src-len", o->run.srcLen, "Source tokens per sentence")
      ->capture_default_str();
  cmd->add_option("--tgt-len", o->run.tgtLen,
                  "Target tokens per sentence (decode: tokens generated)")
      ->capture_default_str();
  cmd->add_option("--beam", o->run.beam,
                  "decode: hypotheses per sentence (1: greedy)")
      ->capture_default_str();
  addPrecisionOption(cmd, o->run.precision);
  cmd->add_option("--cache-precision", o->cachePrecision,
                  "decode: what the decoder's attention caches are held in "
                  "(default: bf16 with --precision bf16, else fp32), to "
                  "measure the caches' width apart from the products'")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--steps", o->run.steps, "Timed steps")
      ->capture_default_str();
  cmd->add_option("--warmup", o->run.warmup, "Untimed steps first")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "CPU threads (0: one per hardware thread)")
      ->capture_default_str();
  cmd->add_option("--device", o->device,
                  "Where the model runs: cpu, or cuda (cuda:N for GPU N)")
      ->capture_default_str();
  cmd->add_flag("--profile", o->run.profile,
                "Print the time per kernel to stderr");
  cmd->callback([o, &exitCode] {
    if (llvm::Error err = bench(*o))
      exitCode = fail("bench", std::move(err));
  });
}

} // namespace loom::cli
