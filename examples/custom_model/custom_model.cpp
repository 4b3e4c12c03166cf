//===- custom_model.cpp - A model the presets cannot express --------------===//
//
// A Transformer written against Loom's C++ builder, outside Loom's tree:
// GELU feed-forward layers, and one encoder layer whose weights are shared by
// every pass through the encoder (as ALBERT shares them). The compile driver
// differentiates it, adds Adam, fuses and plans it, and compiles it for this
// CPU into an executable file; the runtime then loads that file and the
// trainer library trains the model for a few hundred steps on a copy task.
// Only installed headers are used: the builder, the driver, the runtime's
// device interface and the trainer.
//
//   custom_model [--steps N] [--out model.loomx]
//
// It prints the loss every few steps and exits 1 unless the loss falls.
//
//===----------------------------------------------------------------------===//

#include "abi/ModelAbi.h"
#include "api/train/Trainer.h"
#include "driver/CompileDriver.h"
#include "frontend/nn.h"
#include "ir/LoomDialect.h"
#include "runtime/Device.h"
#include "runtime/Session.h"
#include "runtime/Weights.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

using namespace loom;

namespace {

constexpr int64_t kVocab = 24, kModel = 32, kHeads = 4, kFF = 64;
constexpr int64_t kEncoderPasses = 3, kMaxLen = 12, kBatch = 32;

/// torch-style position-wise FFN, with GELU instead of ReLU.
Tensor geluFeedForward(nn::Context &ctx, const std::string &name, Tensor x) {
  Graph &g = ctx.graph;
  Tensor h = gelu(nn::Linear{name + ".linear1", kModel, kFF}(g, x));
  return nn::Linear{name + ".linear2", kFF, kModel}(g, ctx.dropout(h));
}

Tensor addNorm(Graph &g, const std::string &name, Tensor x, Tensor y) {
  return nn::LayerNorm{name, kModel, 1e-5}(g, x + y);
}

/// The one encoder layer; calling it again reuses its parameters.
Tensor sharedEncoderLayer(nn::Context &ctx, Tensor x, Tensor srcMask) {
  nn::MultiHeadAttention attention{"encoder.shared.self_attn", kModel, kHeads};
  x = addNorm(ctx.graph, "encoder.shared.norm1", x,
              ctx.dropout(attention(ctx, x, x, {srcMask})));
  return addNorm(ctx.graph, "encoder.shared.norm2", x,
                 ctx.dropout(geluFeedForward(ctx, "encoder.shared", x)));
}

Tensor decoderLayer(nn::Context &ctx, Tensor x, Tensor memory, Tensor selfMask,
                    Tensor srcMask) {
  nn::MultiHeadAttention self{"decoder.self_attn", kModel, kHeads};
  nn::MultiHeadAttention cross{"decoder.cross_attn", kModel, kHeads};
  x = addNorm(ctx.graph, "decoder.norm1", x,
              ctx.dropout(self(ctx, x, x, {selfMask})));
  x = addNorm(ctx.graph, "decoder.norm2", x,
              ctx.dropout(cross(ctx, x, memory, {srcMask})));
  return addNorm(ctx.graph, "decoder.norm3", x,
                 ctx.dropout(geluFeedForward(ctx, "decoder", x)));
}

Tensor embed(nn::Context &ctx, const char *table, Tensor ids) {
  nn::PositionalEncoding pe{kModel};
  Tensor x = nn::Embedding{table, kVocab, kModel}(ctx.graph, ids) *
             std::sqrt(double(kModel));
  return ctx.dropout(x + pe.forIds(ids));
}

/// @loss(params, src, tgt, seed): the mean label-smoothed cross entropy of
/// teacher-forced targets, the function Loom differentiates.
void buildLoss(mlir::ModuleOp module) {
  Graph g(module, abi::kLoss);
  auto ids = tensorOf({kDyn, kDyn}, g.i32());
  Tensor src = g.input(abi::kSrc, ids, {"batch", "src_len"});
  Tensor tgt = g.input(abi::kTgt, ids, {"batch", "tgt_len"});
  Tensor seed = g.input(abi::kSeed, tensorOf({}, g.i64()));
  nn::Context ctx(g, nn::DropoutRates::all(0.1), seed);

  Tensor srcMask = paddingMask(src, 0, g.f32());
  Tensor memory = embed(ctx, "src_embed", src);
  for (int64_t pass = 0; pass < kEncoderPasses; ++pass)
    memory = sharedEncoderLayer(ctx, memory, srcMask);

  Tensor tgtIn = slice(tgt, 1, 0, -1), targets = slice(tgt, 1, 1, 0);
  Tensor selfMask =
      paddingMask(tgtIn, 0, g.f32()) + causalMask(tgtIn, 1, g.f32());
  Tensor x = decoderLayer(ctx, embed(ctx, "tgt_embed", tgtIn), memory, selfMask,
                          srcMask);
  Tensor logits = nn::Linear{"generator", kModel, kVocab}(g, x);
  Tensor losses = crossEntropy(logits, targets, 0.1, /*ignoreIndex=*/0);
  Tensor real = compare(ComparePredicate::ne, targets, g.scalar(0, g.i32()));
  Tensor count = maximum(sumAll(castTo(real, g.f32())), g.scalar(1, g.f32()));
  g.setDifferentiable();
  g.finish({{abi::kLossOutput, sumAll(losses) / count}});
}

int fail(const std::string &message) {
  std::fprintf(stderr, "custom_model: error: %s\n", message.c_str());
  return 1;
}

/// Prints the loss of every logged report and keeps the first and last.
class LossPrinter : public train::TrainObserver {
public:
  void onStep(const train::StepReport &report) override {
    if (!report.logged)
      return;
    if (std::isnan(first))
      first = report.loss;
    last = report.loss;
    std::printf("step %3lld  loss %.4f\n", (long long)report.step, report.loss);
  }
  double first = NAN, last = NAN;
};

/// Copy-task pairs: target = bos, the source's symbols, eos.
train::TrainData copyTask(int64_t pairs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> symbol(4, kVocab - 1), length(3, 8);
  train::TrainData data;
  for (int64_t i = 0; i < pairs; ++i) {
    std::vector<int64_t> s;
    for (int n = length(rng); n > 0; --n)
      s.push_back(symbol(rng));
    std::vector<int64_t> t = {abi::kBosId};
    t.insert(t.end(), s.begin(), s.end());
    t.push_back(abi::kEosId);
    s.push_back(abi::kEosId);
    data.sources.push_back(s);
    data.targets.push_back(t);
  }
  return data;
}

} // namespace

int main(int argc, char **argv) {
  int64_t steps = 300;
  std::string out = "custom_model.loomx";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--out"))
      out = argv[i + 1];
  }

  // Compile: build, differentiate, add Adam, fuse, plan, generate code.
  mlir::MLIRContext context;
  context.loadDialect<LoomDialect, mlir::func::FuncDialect>();
  auto diagnostics = driver::printDiagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  buildLoss(*module);
  CompilePipelineOptions pipeline;
  pipeline.training.dModel = kModel;
  pipeline.training.warmup = 100;
  pipeline.maxBatch = kBatch;
  pipeline.maxLen = kMaxLen;
  pipeline.maxTokens = kBatch * kMaxLen;
  llvm::Expected<runtime::Executable> exe =
      driver::compileModule(*module, pipeline, driver::CodeTarget());
  if (!exe)
    return fail(llvm::toString(exe.takeError()));
  if (loom::Status saved = saveExecutable(out, *exe); !saved.ok())
    return fail(saved.message());

  // Run: the runtime loads the file, as a program without the compiler would.
  auto program = runtime::Program::load(out);
  if (!program)
    return fail(program.error());
  auto device = runtime::openDevice("cpu", /*threads=*/1);
  if (!device)
    return fail(device.error());
  auto session = runtime::Session::create(*program, *device);
  if (!session)
    return fail(session.error());
  std::printf("%s: %lld parameters (%zu tensors; the encoder layer's are "
              "used %lld times), entry points:",
              out.c_str(), (long long)(*program)->parameterCount(),
              (*program)->parameterNames().size(), (long long)kEncoderPasses);
  for (const runtime::Program::Entry &entry : (*program)->entries())
    std::printf(" @%s", entry.name.c_str());
  std::printf("\n");
  if (loom::Status init = runtime::initParameters(**session, /*seed=*/7);
      !init.ok())
    return fail(init.message());

  // Train through the trainer library: batches of at most kBatch copies,
  // nothing written (no run directory).
  train::TrainerOptions options;
  options.seed = 7;
  options.maxTokens = kBatch * kMaxLen;
  options.maxSentences = kBatch;
  options.steps = steps;
  options.logEvery = 10;
  options.schedule = {kModel, 100, 1.0};
  options.maxLen = kMaxLen;
  LossPrinter losses;
  auto end = train::train(**session, options, train::TrainPosition(),
                          copyTask(steps * kBatch, 11), /*valid=*/nullptr,
                          /*tokenizer=*/nullptr, train::Metadata(), {&losses});
  if (!end)
    return fail(end.error());
  std::printf("loss %.4f -> %.4f\n", losses.first, losses.last);
  return losses.last < 0.8 * losses.first ? 0 : fail("the loss did not fall");
}
