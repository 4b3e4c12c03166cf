//===- Demo.cpp - `loom demo` ---------------------------------------------===//
//
// The README's main job: no files needed. It makes a synthetic translation
// task (reverse or copy a string of symbols), builds the `tiny` Transformer
// and compiles it with the whole pipeline of `loom compile` (fusion,
// gradients, Adam, elementwise regions, memory plan). It trains it on the
// reference interpreter with fresh random batches, every temporary inside the
// planned arena, and decodes held-out sentences greedily with the encoder
// output and the self-attention cache, printing a few and the exact-match
// rate.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Demo.h"

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/SyntheticTask.h"
#include "frontend/Transformer.h"
#include "ir/LoomDialect.h"
#include "passes/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace loom;

namespace {

using Clock = std::chrono::steady_clock;

/// Held-out sentences decoded per batch.
constexpr int64_t kDecodeChunk = 50;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(llvm::Error err) {
  llvm::errs() << "loom demo: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

} // namespace

int loom::runDemo(const DemoOptions &options) {
  SyntheticTask task;
  if (options.task == "copy")
    task.kind = SyntheticTaskKind::Copy;
  else if (options.task != "reverse")
    return fail(llvm::createStringError("unknown task '" + options.task +
                                        "' (expected reverse or copy)"));
  if (options.steps <= 0 || options.batch <= 0)
    return fail(
        llvm::createStringError("--steps and --batch must be positive"));

  auto config = presetConfig("tiny");
  if (!config)
    return fail(config.takeError());
  task.vocab = std::min(config->src_vocab(), config->tgt_vocab());

  mlir::MLIRContext ctx;
  ctx.loadDialect<LoomDialect, mlir::func::FuncDialect>();
  auto module = buildModelModule(ctx, *config);
  if (!module)
    return fail(llvm::createStringError("could not build the model"));
  // The whole compile pipeline, as `loom compile` runs it: the interpreter
  // then trains through fused attention, linear and elementwise regions.
  CompilePipelineOptions pipeline;
  pipeline.training.dModel = config->d_model();
  pipeline.training.warmup = options.warmup;
  pipeline.training.lrScale = options.lrScale;
  // Planned for the largest batches the demo runs: training batches and the
  // decoding chunks below, sentences of at most maxLength symbols + 2.
  pipeline.maxLen = task.maxLength + 2;
  pipeline.maxBatch = std::max<int64_t>(options.batch, kDecodeChunk);
  pipeline.maxTokens = pipeline.maxBatch * pipeline.maxLen;
  if (mlir::failed(runCompilePipeline(*module, pipeline)))
    return fail(llvm::createStringError("the compile pipeline failed"));

  // Every temporary lives in the planned arena, at its planned offset.
  InterpreterOptions interpreter;
  interpreter.useArenaPlan = true;
  InterpretedModel model(*module, interpreter);
  model.initParameters(options.seed);
  int64_t numParams = 0;
  for (auto &[name, t] : model.parameters())
    numParams += t.numel();

  llvm::outs() << "Loom demo: learning to " << options.task << " strings of "
               << task.minLength << "-" << task.maxLength << " symbols\n"
               << "model: tiny Transformer (d_model " << config->d_model()
               << ", " << config->heads() << " heads, "
               << config->encoder_layers() << "+" << config->decoder_layers()
               << " layers, " << numParams << " parameters), "
               << "compiled (fused attention, linear, elementwise regions, "
                  "memory plan) and trained with @train_step on the "
                  "reference interpreter, inside the planned arena\n";

  auto start = Clock::now();
  int64_t tokens = 0;
  double recent = 0;
  int64_t reportEvery = std::max<int64_t>(1, options.steps / 12);
  for (int64_t step = 1; step <= options.steps; ++step) {
    auto batch =
        makeSyntheticPairs(task, options.batch, options.seed * 1000003 + step);
    HostTensor src = padBatch(sourcesOf(batch));
    HostTensor tgt = padBatch(targetsOf(batch));
    for (const SentencePair &p : batch)
      tokens += int64_t(p.tgt.size()) - 1;
    auto loss = model.trainStep(src, tgt, step);
    if (!loss)
      return fail(loss.takeError());
    recent += *loss;
    if (step % reportEvery == 0 || step == options.steps) {
      double elapsed = secondsSince(start);
      double lr = options.lrScale / std::sqrt(double(config->d_model())) *
                  std::min(1.0 / std::sqrt(double(step)),
                           step * std::pow(double(options.warmup), -1.5));
      int64_t n = step % reportEvery == 0 ? reportEvery : step % reportEvery;
      llvm::outs() << llvm::format(
          "step %5lld/%lld  loss %7.4f  lr %.2e  %6.0f tok/s  %5.1fs\n",
          (long long)step, (long long)options.steps, recent / n, lr,
          tokens / elapsed, elapsed);
      recent = 0;
    }
  }

  // Held-out sentences from another seed.
  auto heldOut =
      makeSyntheticPairs(task, options.heldOut, options.seed * 7919 + 424242);
  int64_t exact = 0, shown = 0;
  llvm::outs() << "\ngreedy decoding of " << heldOut.size()
               << " held-out sentences (encoder once, self-attention cache "
                  "per step):\n";
  for (size_t i = 0; i < heldOut.size(); i += kDecodeChunk) {
    std::vector<SentencePair> part(
        heldOut.begin() + i,
        heldOut.begin() + std::min(heldOut.size(), i + kDecodeChunk));
    auto outputs = model.greedy(padBatch(sourcesOf(part)), task.maxLength + 2,
                                kBosId, kEosId);
    if (!outputs)
      return fail(outputs.takeError());
    for (size_t j = 0; j < part.size(); ++j) {
      auto expected = syntheticAnswer(task, part[j].src);
      bool ok = (*outputs)[j] == expected;
      exact += ok;
      if (shown < 6) {
        llvm::outs() << "  " << symbolsToString(part[j].src) << " -> "
                     << symbolsToString((*outputs)[j])
                     << (ok ? "  (correct)"
                            : "  (expected " + symbolsToString(expected) + ")")
                     << "\n";
        ++shown;
      }
    }
  }
  llvm::outs() << llvm::format(
      "exact match: %lld/%zu (%.1f%%) in %.1fs\n", (long long)exact,
      heldOut.size(), 100.0 * exact / heldOut.size(), secondsSince(start));
  llvm::outs()
      << "\nNext: `loom compile --preset base --dump-dir ir/ --report "
         "base.json` compiles the paper's model\n(fusion, gradients, Adam, "
         "memory plan) and keeps the IR after every pass; `loom forward` "
         "and\n`loom grad` run a config with safetensors weights (see "
         "README).\n";
  return 0;
}
