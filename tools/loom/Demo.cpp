//===- Demo.cpp - `loom demo` ---------------------------------------------===//
//
// The README's main job: no files needed. It makes a synthetic translation
// task (reverse or copy a string of symbols), builds the `tiny` Transformer
// and compiles it for the CPU as `loom compile --target cpu` does (fusion,
// gradients, Adam, elementwise regions, memory plan, native kernels). It
// trains it through the trainer library, as `loom train` does, on a
// synthetic corpus large enough that no pair is seen twice, writing
// nothing, and translates held-out sentences with beam search (the encoder
// output and the self-attention cache), printing a few, the exact-match
// rate and BLEU.
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Demo.h"

#include "tools/loom/Common.h"
#include "tools/loom/Sessions.h"

#include "api/train/Trainer.h"
#include "frontend/Config.h"
#include "frontend/SyntheticTask.h"
#include "runtime/Decoding.h"
#include "text/Bleu.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

#include "llvm/Support/FormatVariadic.h"

using namespace loom;

namespace {

/// The symbols of `ids` separated by spaces, as BLEU's words.
std::string spacedSymbols(const std::vector<int64_t> &ids) {
  std::string text;
  for (int64_t id : ids) {
    std::string symbol = symbolsToString({id});
    if (symbol.empty())
      continue;
    text += (text.empty() ? "" : " ") + symbol;
  }
  return text;
}

using Clock = std::chrono::steady_clock;

/// Held-out sentences decoded per batch, and hypotheses kept per sentence.
constexpr int64_t kDecodeChunk = 50;
constexpr int64_t kBeam = 4;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int fail(llvm::Error err) { return cli::fail("demo", std::move(err)); }

/// The demo's progress: a line per logged report.
class DemoProgress : public train::TrainObserver {
public:
  DemoProgress(int64_t steps, Clock::time_point start)
      : steps(steps), start(start) {}
  void onStep(const train::StepReport &r) override {
    if (!r.logged)
      return;
    llvm::outs() << llvm::format(
        "step %5lld/%lld  loss %7.4f  lr %.2e  %6.0f tok/s  %5.1fs\n",
        (long long)r.step, (long long)steps, r.loss, r.learningRate,
        r.tokensPerSecond, secondsSince(start));
  }

private:
  int64_t steps;
  Clock::time_point start;
};

} // namespace

int loom::runDemo(const DemoOptions &options) {
  SyntheticTask task;
  if (options.task == "copy")
    task.kind = SyntheticTaskKind::Copy;
  else if (options.task != "reverse")
    return fail(llvm::createStringError("unknown task '" + options.task +
                                        "' (expected reverse or copy)"));
  // Bounded so that a typo is refused rather than allocated or run for
  // days: the demo is a minute's training of the tiny model.
  constexpr int64_t kMaxSteps = 1000000, kMaxBatch = 4096, kMaxHeldOut = 100000;
  if (options.steps <= 0 || options.steps > kMaxSteps || options.batch <= 0 ||
      options.batch > kMaxBatch || options.heldOut < 1 ||
      options.heldOut > kMaxHeldOut || options.warmup < 1 ||
      !(options.lrScale > 0) || !std::isfinite(options.lrScale))
    return fail(llvm::createStringError(llvm::formatv(
        "--steps must be in [1, {0}], --batch in [1, {1}], --held-out in "
        "[1, {2}], --warmup at least 1 and --lr-scale a finite positive "
        "number",
        kMaxSteps, kMaxBatch, kMaxHeldOut)));

  auto config = presetConfig("tiny");
  if (!config)
    return fail(config.takeError());
  task.vocab = std::min(config->src_vocab(), config->tgt_vocab());

  // The whole compile pipeline, as `loom compile --target cpu` runs it,
  // planned for the largest batches the demo runs: training batches and the
  // decoding chunks below, sentences of at most maxLength symbols + 2.
  int64_t maxLen = task.maxLength + 2;
  int64_t maxBatch = std::max<int64_t>(options.batch, kDecodeChunk * kBeam);
  CompilePipelineOptions pipeline =
      cli::pipelineFor(*config, maxBatch * maxLen, maxLen, maxBatch);
  pipeline.training.warmup = options.warmup;
  pipeline.training.lrScale = options.lrScale;
  auto compileStart = Clock::now();
  auto exe = cli::compileCpuExecutable(*config, pipeline);
  if (!exe)
    return fail(exe.takeError());
  auto model = cli::loadCpuSession(std::move(*exe), options.threads);
  if (!model)
    return fail(model.takeError());
  if (llvm::Error err = cli::initParameters(**model, options.seed))
    return fail(std::move(err));
  int64_t numParams = (*model)->program().parameterCount();

  llvm::outs() << "Loom demo: learning to " << options.task << " strings of "
               << task.minLength << "-" << task.maxLength << " symbols\n"
               << "model: tiny Transformer (d_model " << config->d_model()
               << ", " << config->heads() << " heads, "
               << config->encoder_layers() << "+" << config->decoder_layers()
               << " layers, " << numParams << " parameters), compiled for "
               << "this CPU in "
               << llvm::format("%.1f", secondsSince(compileStart))
               << "s (fused attention, linear, elementwise regions, memory "
                  "plan, native kernels) on "
               << cli::cpuThreads(**model) << " threads\n";

  // As many pairs as the steps take, so that none is seen twice: each
  // step's batch is new, as a task with unbounded data allows.
  auto corpus = makeSyntheticPairs(task, options.steps * options.batch,
                                   options.seed * 1000003);
  train::TrainData data{sourcesOf(corpus), targetsOf(corpus)};
  train::TrainerOptions trainer;
  trainer.seed = options.seed;
  trainer.maxTokens = options.batch * maxLen;
  trainer.maxSentences = options.batch;
  trainer.steps = options.steps;
  trainer.logEvery = std::max<int64_t>(1, options.steps / 12);
  trainer.schedule = learningRateSchedule(pipeline.training);
  trainer.maxLen = maxLen;
  auto start = Clock::now();
  DemoProgress progress(options.steps, start);
  auto trained = cli::toExpected(train::train(
      **model, trainer, train::TrainPosition(), data, /*valid=*/nullptr,
      /*tokenizer=*/nullptr, train::Metadata(), {&progress}));
  if (!trained)
    return fail(trained.takeError());

  // Held-out sentences from another seed, translated with beam search as
  // `loom translate` does: encoder once, self-attention cache per step.
  auto heldOut =
      makeSyntheticPairs(task, options.heldOut, options.seed * 7919 + 424242);
  std::vector<std::string> hyps, refs;
  int64_t exact = 0;
  llvm::outs() << "\ntranslating " << heldOut.size()
               << " held-out sentences (beam " << kBeam << "):\n";
  for (size_t i = 0; i < heldOut.size(); i += kDecodeChunk) {
    std::vector<SentencePair> part(
        heldOut.begin() + i,
        heldOut.begin() + std::min(heldOut.size(), i + kDecodeChunk));
    auto src = cli::idsTensor(sourcesOf(part));
    if (!src)
      return fail(src.takeError());
    runtime::BeamOptions beam;
    beam.beam = kBeam;
    beam.maxLen = task.maxLength + 2;
    beam.bos = kBosId;
    beam.eos = kEosId;
    auto found = runtime::beamSearch(**model, src->ref(), beam);
    if (!found)
      return fail(llvm::createStringError(found.error()));
    for (size_t j = 0; j < part.size(); ++j) {
      const std::vector<int32_t> &best = (*found)[j].front().tokens;
      std::vector<int64_t> output(best.begin(), best.end());
      std::vector<int64_t> expected = syntheticAnswer(task, part[j].src);
      bool ok = output == expected;
      exact += ok;
      hyps.push_back(spacedSymbols(output));
      refs.push_back(spacedSymbols(expected));
      if (hyps.size() <= 6)
        llvm::outs() << "  " << symbolsToString(part[j].src) << " -> "
                     << symbolsToString(output)
                     << (ok ? "  (correct)"
                            : "  (expected " + symbolsToString(expected) + ")")
                     << "\n";
    }
  }
  // BLEU with every symbol a word: partial credit for near misses.
  text::BleuOptions bleu;
  bleu.tokenize = "none";
  text::BleuScore score = text::corpusBleu(hyps, refs, bleu);
  llvm::outs() << llvm::format("exact match: %lld/%zu (%.1f%%) in %.1fs\n",
                               (long long)exact, heldOut.size(),
                               100.0 * exact / heldOut.size(),
                               secondsSince(start))
               << score.formatted() << "\n"
               << text::bleuSignature(false, "none") << "\n";
  llvm::outs()
      << "\nNext, a real translator (Multi30k En-De, see README):\n"
         "  loom train --preset small --train train.en train.de --valid "
         "val.en val.de --out run --epochs 28 --warmup 800 --lr-scale 0.5\n"
         "  loom average run --last 5\n"
         "  loom translate --model run < val.en > hyp.de\n"
         "  loom score --ref val.de < hyp.de\n"
         "`loom compile --preset base --target cpu -o base.loomx` compiles the "
         "paper's model (`--dump-dir ir/` keeps the IR after every pass).\n";
  return 0;
}
