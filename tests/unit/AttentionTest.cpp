//===- AttentionTest.cpp - Fused attention against the unfused graph ------===//
//
// The interpreter's loom.attention against the op sequence it replaces (same
// inputs, f64), loom.attention_grad against finite differences of
// loom.attention, and loom-fuse-attention on whole models: the tiny
// Transformer with dropout computes the same loss and gradients fused and
// unfused, with every attention fused, and the base model's @loss fuses all
// of its 18 attentions.
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"
#include "TestUtil.h"

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/SyntheticTask.h"
#include "frontend/Transformer.h"
#include "ir/Interpreter.h"
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace loom;

namespace {

HostTensor randomTensor(std::mt19937 &rng, std::vector<int64_t> shape,
                        double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  HostTensor t(std::move(shape), DType::F32);
  for (double &x : t.data)
    x = dist(rng);
  return t;
}

/// Expects `a` and `b` to agree within `tol`, relative to b's largest
/// magnitude (absolute for values near 1).
void expectClose(const HostTensor &a, const HostTensor &b, double tol,
                 const std::string &what) {
  ASSERT_EQ(a.shape, b.shape) << what;
  double scale = 1e-300, worst = 0;
  for (double x : b.data)
    scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < a.data.size(); ++i)
    worst = std::max(worst, std::fabs(a.data[i] - b.data[i]));
  EXPECT_LE(worst, tol * std::max(scale, 1.0))
      << what << ": largest difference " << worst << " (scale " << scale << ")";
}

std::vector<HostTensor> run(ModuleOp module, StringRef fn,
                            const std::vector<HostTensor> &args) {
  InterpreterOptions options;
  options.f64 = true;
  auto results = Interpreter(module, options).run(fn, args);
  if (!results) {
    ADD_FAILURE() << "@" << fn.str() << ": "
                  << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

//===----------------------------------------------------------------------===//
// The interpreter's kernels against the unfused graph
//===----------------------------------------------------------------------===//

// Self-attention over dynamic [B, 2, S, *] operands: padding mask plus an
// arbitrary additive [S, S] mask plus the causal mask, dropout 0.3. The
// unfused graph adds the masks as one sum, as the frontend does, and forms
// lse from reductions.
const char *kSelfAttention = R"mlir(
func.func @unfused(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x3xf32>,
                   %ids: tensor<?x?xi32>, %extra: tensor<?x?xf32>, %seed: tensor<i64>)
    -> (tensor<?x2x?x3xf32>, tensor<?x2x?xf32>) {
  %pad = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %pe = loom.add %pad, %extra : (tensor<?x1x1x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %causal = loom.causal_mask %ids {dim = 1 : i64} : tensor<?x?xi32> -> tensor<?x?xf32>
  %mask = loom.add %pe, %causal : (tensor<?x1x?x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %s = loom.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %c = loom.constant dense<0.375> : tensor<f32>
  %t = loom.mul %s, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = loom.add %t, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %mx = loom.reduce_max %m [3] : (tensor<?x2x?x?xf32>) -> tensor<?x2x?xf32>
  %mxk = loom.reduce_max %m [3] keep_dims : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x1xf32>
  %sh = loom.sub %m, %mxk : (tensor<?x2x?x?xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x?xf32>
  %e = loom.exp %sh : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %sum = loom.reduce_sum %e [3] : (tensor<?x2x?x?xf32>) -> tensor<?x2x?xf32>
  %log = loom.log %sum : (tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %lse = loom.add %mx, %log : (tensor<?x2x?xf32>, tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %p = loom.softmax %m {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d = loom.dropout %p, %seed {rate = 0.3 : f64, offset = 7 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o = loom.matmul %d, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x3xf32>) -> tensor<?x2x?x3xf32>
  return %o, %lse : tensor<?x2x?x3xf32>, tensor<?x2x?xf32>
}
func.func @fused(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x3xf32>,
                 %ids: tensor<?x?xi32>, %extra: tensor<?x?xf32>, %seed: tensor<i64>)
    -> (tensor<?x2x?x3xf32>, tensor<?x2x?xf32>) {
  %pad = loom.padding_mask %ids {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %pe = loom.add %pad, %extra : (tensor<?x1x1x?xf32>, tensor<?x?xf32>) -> tensor<?x1x?x?xf32>
  %o, %lse = loom.attention %q, %k, %v mask(%pe : tensor<?x1x?x?xf32>) seed(%seed : tensor<i64>)
      {scale = 0.375 : f64, causal, dropout_rate = 0.3 : f64, dropout_offset = 7 : i64}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x3xf32> -> tensor<?x2x?x3xf32>, tensor<?x2x?xf32>
  return %o, %lse : tensor<?x2x?x3xf32>, tensor<?x2x?xf32>
}
)mlir";

TEST(AttentionInterpreter, SelfAttentionMatchesUnfusedGraph) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, kSelfAttention);
  ASSERT_TRUE(module);
  std::mt19937 rng(1);
  // Batch 2, length 6; the second sentence is padded after 4 tokens.
  HostTensor ids({2, 6}, DType::I32, {5, 7, 9, 4, 8, 6, 3, 5, 6, 2, 0, 0});
  std::vector<HostTensor> args = {randomTensor(rng, {2, 2, 6, 4}, -2, 2),
                                  randomTensor(rng, {2, 2, 6, 4}, -2, 2),
                                  randomTensor(rng, {2, 2, 6, 3}),
                                  ids,
                                  randomTensor(rng, {6, 6}),
                                  HostTensor::scalar(1234, DType::I64)};
  auto unfused = run(*module, "unfused", args);
  auto fused = run(*module, "fused", args);
  ASSERT_EQ(unfused.size(), 2u);
  ASSERT_EQ(fused.size(), 2u);
  expectClose(fused[0], unfused[0], 1e-12, "out");
  expectClose(fused[1], unfused[1], 1e-12, "lse");
  // Dropout 0.3 really dropped something: the output differs without it.
  args[5] = HostTensor::scalar(99, DType::I64);
  auto reseeded = run(*module, "fused", args);
  ASSERT_EQ(reseeded.size(), 2u);
  EXPECT_NE(reseeded[0].data, fused[0].data);
}

// Cross-attention, Sq = 3 queries over Sk = 5 keys, with a key-padding mask
// in which one source sentence is padding throughout (its rows stay finite
// and uniform, as the unfused graph makes them), and dropout.
const char *kCrossAttention = R"mlir(
func.func @unfused(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x6xf32>,
                   %src: tensor<?x?xi32>, %seed: tensor<i64>) -> tensor<?x2x?x6xf32> {
  %pad = loom.padding_mask %src {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %kt = loom.transpose %k [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = loom.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %c = loom.constant dense<2.0> : tensor<f32>
  %t = loom.div %s, %c : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = loom.add %t, %pad : (tensor<?x2x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x?x?xf32>
  %p = loom.softmax %m {axis = 3 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %d = loom.dropout %p, %seed {rate = 0.3 : f64, offset = 2 : i64} : (tensor<?x2x?x?xf32>, tensor<i64>) -> tensor<?x2x?x?xf32>
  %o = loom.matmul %d, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x6xf32>) -> tensor<?x2x?x6xf32>
  return %o : tensor<?x2x?x6xf32>
}
func.func @fused(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x6xf32>,
                 %src: tensor<?x?xi32>, %seed: tensor<i64>) -> tensor<?x2x?x6xf32> {
  %pad = loom.padding_mask %src {pad = 0 : i64} : tensor<?x?xi32> -> tensor<?x1x1x?xf32>
  %o, %lse = loom.attention %q, %k, %v mask(%pad : tensor<?x1x1x?xf32>) seed(%seed : tensor<i64>)
      {scale = 0.5 : f64, dropout_rate = 0.3 : f64, dropout_offset = 2 : i64}
      : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x6xf32> -> tensor<?x2x?x6xf32>, tensor<?x2x?xf32>
  return %o : tensor<?x2x?x6xf32>
}
)mlir";

TEST(AttentionInterpreter, CrossAttentionMatchesUnfusedGraph) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, kCrossAttention);
  ASSERT_TRUE(module);
  std::mt19937 rng(2);
  HostTensor src({3, 5}, DType::I32,
                 {4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 0, 0, 0, 0, 0});
  std::vector<HostTensor> args = {randomTensor(rng, {3, 2, 3, 4}, -2, 2),
                                  randomTensor(rng, {3, 2, 5, 4}, -2, 2),
                                  randomTensor(rng, {3, 2, 5, 6}), src,
                                  HostTensor::scalar(77, DType::I64)};
  auto unfused = run(*module, "unfused", args);
  auto fused = run(*module, "fused", args);
  ASSERT_EQ(unfused.size(), 1u);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].shape, (std::vector<int64_t>{3, 2, 3, 6}));
  expectClose(fused[0], unfused[0], 1e-12, "out");
}

TEST(AttentionInterpreter, MaskThatDoesNotBroadcastIsAnError) {
  const char *text = R"mlir(
func.func @f(%q: tensor<1x3x4xf32>, %m: tensor<?x?xf32>) -> tensor<1x3x4xf32> {
  %o, %lse = loom.attention %q, %q, %q mask(%m : tensor<?x?xf32>) {scale = 1.0 : f64}
      : tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32> -> tensor<1x3x4xf32>, tensor<1x3xf32>
  return %o : tensor<1x3x4xf32>
}
)mlir";
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, text);
  ASSERT_TRUE(module);
  auto results = Interpreter(*module).run(
      "f", {HostTensor({1, 3, 4}, DType::F32), HostTensor({3, 7}, DType::F32)});
  ASSERT_FALSE(static_cast<bool>(results));
  std::string message = llvm::toString(results.takeError());
  EXPECT_NE(message.find("'loom.attention'"), std::string::npos) << message;
  EXPECT_NE(message.find("mask 3x7 does not broadcast to the scores 1x3x3"),
            std::string::npos)
      << message;
}

//===----------------------------------------------------------------------===//
// The gradient rule and loom.attention_grad against finite differences
//===----------------------------------------------------------------------===//

TEST(AttentionGradient, MaskCausalDropout) {
  // q [2, 2, 3, 4] attends to 3 keys; a constant additive mask [3, 3].
  test::GradientCheck(31)
      .uniform("q", {2, 2, 3, 4})
      .uniform("k", {2, 2, 3, 4})
      .uniform("v", {2, 2, 3, 5})
      .values("seed", {}, {5}, DType::I64)
      .op("%mask = loom.constant dense<[[0.0, -0.5, 0.25], [0.3, 0.0, -1.0], "
          "[-0.2, 0.4, 0.0]]> : tensor<3x3xf32>")
      .op("%y, %lse = loom.attention %q, %k, %v mask(%mask : tensor<3x3xf32>) "
          "seed(%seed : tensor<i64>) {scale = 0.6 : f64, causal, dropout_rate "
          "= 0.3 : f64, dropout_offset = 4 : i64} : tensor<2x2x3x4xf32>, "
          "tensor<2x2x3x4xf32>, tensor<2x2x3x5xf32> -> tensor<2x2x3x5xf32>, "
          "tensor<2x2x3xf32>")
      .check({2, 2, 3, 5});
}

TEST(AttentionGradient, CrossAttentionDynamicShapes) {
  // Two queries over five keys, no mask or dropout, dims dynamic in the type.
  std::mt19937 rng(32);
  HostTensor k = randomTensor(rng, {3, 5, 4}, -2, 2);
  test::GradientCheck(32)
      .uniform("q", {3, 2, 4}, -2, 2)
      .values("k", k.shape, k.data, DType::F32, {-1, -1, 4})
      .uniform("v", {3, 5, 3})
      .op("%y, %lse = loom.attention %q, %k, %v {scale = 0.5 : f64} : "
          "tensor<3x2x4xf32>, tensor<?x?x4xf32>, tensor<3x5x3xf32> -> "
          "tensor<3x2x3xf32>, tensor<3x2xf32>")
      .check({3, 2, 3});
}

TEST(AttentionGradient, LossThroughLseIsRefused) {
  const char *text = R"mlir(
func.func @loss(%q: tensor<2x4xf32>) -> tensor<f32> attributes {loom.differentiable} {
  %o, %lse = loom.attention %q, %q, %q {scale = 1.0 : f64}
      : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>, tensor<2xf32>
  %l = loom.reduce_sum %lse [0] : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, text);
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx.get(), [&](Diagnostic &d) {
    diagnostics += d.str() + "\n";
    return success();
  });
  PassManager pm(ctx.get());
  pm.addPass(createLoomAutodiff());
  EXPECT_TRUE(failed(pm.run(*module)));
  EXPECT_NE(diagnostics.find("the loss depends on the lse result"),
            std::string::npos)
      << diagnostics;
}

//===----------------------------------------------------------------------===//
// Whole models
//===----------------------------------------------------------------------===//

int64_t count(func::FuncOp fn, StringRef opName) {
  int64_t n = 0;
  fn.walk([&](Operation *op) { n += op->getName().getStringRef() == opName; });
  return n;
}

LogicalResult fuseAttention(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createLoomFuseAttention());
  return pm.run(module);
}

TEST(FuseAttentionModel, TinyWithDropoutKeepsLossAndGradients) {
  auto config = presetConfig("tiny");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  config->set_dropout(0.25);
  auto ctx = test::makeContext();
  auto unfused = buildModelModule(*ctx, *config);
  auto fused = buildModelModule(*ctx, *config);
  ASSERT_TRUE(unfused && fused);
  // Fusion runs before autodiff, as in the compile pipeline.
  ASSERT_TRUE(succeeded(fuseAttention(*fused)));
  TrainingPipelineOptions pipeline;
  pipeline.dModel = config->d_model();
  ASSERT_TRUE(succeeded(runTrainingPipeline(*unfused, pipeline)));
  ASSERT_TRUE(succeeded(runTrainingPipeline(*fused, pipeline)));

  // Every attention is fused: encoder self-attention, decoder self- and
  // cross-attention; no softmax is left in the forward.
  int64_t layers = config->encoder_layers() + 2 * config->decoder_layers();
  auto fn = [&](StringRef name) {
    return fused->lookupSymbol<func::FuncOp>(name);
  };
  EXPECT_EQ(count(fn("loss"), "loom.attention"), layers);
  EXPECT_EQ(count(fn("loss"), "loom.softmax"), 0);
  EXPECT_EQ(count(fn("loss_grad"), "loom.attention"), layers);
  EXPECT_EQ(count(fn("loss_grad"), "loom.attention_grad"), layers);
  EXPECT_EQ(count(fn("loss_grad"), "loom.softmax"), 0);
  EXPECT_EQ(count(fn("token_log_probs"), "loom.attention"), layers);
  EXPECT_EQ(count(fn("encode"), "loom.attention"), config->encoder_layers());
  EXPECT_EQ(count(fn("decode_step"), "loom.attention"),
            2 * config->decoder_layers());
  EXPECT_EQ(count(fn("loss"), "loom.causal_mask"), 0);

  // Same parameters and batch on both; sentences of different lengths, so
  // padding masks matter.
  InterpreterOptions f64;
  f64.f64 = true;
  InterpretedModel reference(*unfused, f64), candidate(*fused, f64);
  reference.initParameters(11);
  candidate.parameters() = reference.parameters();
  SyntheticTask task;
  task.vocab = config->tgt_vocab();
  auto batch = makeSyntheticPairs(task, 4, 5);
  NamedTensors inputs = {{"src", padBatch(sourcesOf(batch))},
                         {"tgt", padBatch(targetsOf(batch))},
                         {"seed", HostTensor::scalar(42, DType::I64)}};
  for (const char *name : {"loss", "loss_grad", "token_log_probs"}) {
    auto want = reference.call(name, inputs);
    auto got = candidate.call(name, inputs);
    ASSERT_TRUE(static_cast<bool>(want)) << llvm::toString(want.takeError());
    ASSERT_TRUE(static_cast<bool>(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(want->size(), got->size());
    for (auto &[key, value] : *want)
      expectClose((*got)[key], value, 1e-9, std::string(name) + " " + key);
  }
  // Dropout is on in @loss: another seed changes the loss.
  inputs["seed"] = HostTensor::scalar(43, DType::I64);
  auto other = candidate.call("loss", inputs);
  ASSERT_TRUE(static_cast<bool>(other)) << llvm::toString(other.takeError());
  auto first =
      reference.call("loss", {{"src", inputs["src"]},
                              {"tgt", inputs["tgt"]},
                              {"seed", HostTensor::scalar(42, DType::I64)}});
  ASSERT_TRUE(static_cast<bool>(first)) << llvm::toString(first.takeError());
  EXPECT_NE((*other)["loss"].data, (*first)["loss"].data);
}

TEST(FuseAttentionModel, BaseFusesEighteenAttentions) {
  auto config = presetConfig("base");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  auto ctx = test::makeContext();
  auto module = buildModelModule(*ctx, *config);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(fuseAttention(*module)));
  auto loss = module->lookupSymbol<func::FuncOp>("loss");
  EXPECT_EQ(count(loss, "loom.attention"), 18);
  EXPECT_EQ(count(loss, "loom.softmax"), 0);
}

} // namespace
