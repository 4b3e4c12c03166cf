//===- FuseElementwiseTest.cpp - loom-fuse-elementwise on whole models ----===//
//
// The tiny Transformer (with dropout and label smoothing) after autodiff and
// Adam, before and after the pass: every entry point computes the same
// values on the interpreter for random parameters, optimizer state and
// inputs; the number of top-level ops falls by a large factor; no
// elementwise op is left outside a region; the Adam update is one region per
// parameter shape. Small modules check that a region rounds each op as the
// function around it does, and that a failure inside a region names both.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <set>

using namespace mlir;
using namespace loom;

namespace {

LogicalResult fuse(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addNestedPass<func::FuncOp>(createLoomFuseElementwise());
  return pm.run(module);
}

/// A trainable module of preset `name`: the model, @loss_grad and @train_step.
OwningOpRef<ModuleOp> trainable(MLIRContext &ctx, TransformerConfig config) {
  auto module = buildModelModule(ctx, config);
  if (!module)
    return nullptr;
  TrainingPipelineOptions pipeline;
  pipeline.dModel = config.d_model();
  pipeline.warmup = 10;
  if (failed(runTrainingPipeline(*module, pipeline)))
    return nullptr;
  return module;
}

size_t topLevelOps(ModuleOp module, StringRef name) {
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  return fn ? fn.getBody().front().getOperations().size() : 0;
}

HostTensor uniform(std::vector<int64_t> shape, double lo, double hi,
                   std::mt19937_64 &rng) {
  HostTensor t(std::move(shape), DType::F32);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (double &x : t.data)
    x = roundToKind(dist(rng), DType::F32);
  return t;
}

/// Token ids in [1, vocab) with the last `pad` positions of odd rows 0.
HostTensor ids(int64_t batch, int64_t len, int64_t vocab, int64_t pad,
               std::mt19937_64 &rng) {
  HostTensor t({batch, len}, DType::I32);
  std::uniform_int_distribution<int64_t> dist(1, vocab - 1);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < len; ++i)
      t.data[b * len + i] = (b % 2 && i >= len - pad) ? 0 : double(dist(rng));
  return t;
}

void expectSame(const NamedTensors &expected, const NamedTensors &actual,
                const std::string &fn) {
  ASSERT_EQ(expected.size(), actual.size()) << fn;
  for (const auto &[name, want] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << fn << " lost output " << name;
    const HostTensor &got = it->second;
    ASSERT_EQ(got.shape, want.shape) << fn << " " << name;
    for (size_t i = 0; i < want.data.size(); ++i)
      ASSERT_NEAR(got.data[i], want.data[i],
                  1e-9 * std::max(1.0, std::fabs(want.data[i])))
          << fn << " " << name << " at " << i;
  }
}

TEST(FuseElementwise, TinyModelComputesTheSameWithFarFewerOps) {
  auto ctx = test::makeContext();
  auto config = presetConfig("tiny");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  config->set_dropout(0.1);
  config->set_label_smoothing(0.1);
  auto unfused = trainable(*ctx, *config);
  ASSERT_TRUE(unfused);
  OwningOpRef<ModuleOp> fused = unfused->clone();
  ASSERT_TRUE(succeeded(fuse(*fused)));

  const char *entries[] = {"train_step", "loss_grad", "encode", "decode_step"};
  for (const char *fn : entries) {
    size_t before = topLevelOps(*unfused, fn), after = topLevelOps(*fused, fn);
    std::cout << "@" << fn << ": " << before << " top-level ops before, "
              << after << " after\n";
  }
  // The backward pass and Adam are mostly elementwise work.
  EXPECT_LT(3 * topLevelOps(*fused, "train_step"),
            topLevelOps(*unfused, "train_step"));
  // Half of @loss_grad is matmuls, sum_to, transposes and slices.
  EXPECT_LT(3 * topLevelOps(*fused, "loss_grad"),
            2 * topLevelOps(*unfused, "loss_grad"));

  // Nothing elementwise is left outside a region.
  fused->walk([&](Operation *op) {
    if (isa<AddOp, SubOp, MulOp, DivOp, ExpOp, SqrtOp, RsqrtOp, SelectOp,
            CompareOp, SoftmaxOp, LayerNormOp, DropoutOp>(op))
      EXPECT_TRUE(isa<FusionOp>(op->getParentOp()))
          << "top-level " << op->getName().getStringRef().str();
  });

  // Adam: the values @train_step returns for parameters and moments come
  // from one region per parameter shape.
  auto step = fused->lookupSymbol<func::FuncOp>("train_step");
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  std::set<Operation *> adamRegions;
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto name = step.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    if (!name || name.getValue() == "loss")
      continue;
    Operation *def = ret.getOperand(i).getDefiningOp();
    ASSERT_TRUE(def && isa<FusionOp>(def)) << name.str();
    adamRegions.insert(def);
  }
  std::set<std::vector<int64_t>> shapes;
  InterpretedModel shapeSource(*unfused);
  for (auto &[name, shape] : shapeSource.parameterShapes())
    shapes.insert(shape);
  std::cout << "Adam update: " << adamRegions.size() << " regions for "
            << shapes.size() << " parameter shapes\n";
  EXPECT_LE(adamRegions.size(), shapes.size());

  // Random parameters, moments and inputs; f64 so that any difference in
  // what is computed shows.
  InterpreterOptions f64;
  f64.f64 = true;
  InterpretedModel before(*unfused, f64), after(*fused, f64);
  std::mt19937_64 rng(11);
  NamedTensors inputs;
  for (auto &[name, shape] : before.parameterShapes()) {
    HostTensor p = uniform(shape, -0.3, 0.3, rng);
    before.parameters()[name] = p;
    after.parameters()[name] = p;
    inputs["exp_avg." + name] = uniform(shape, -1e-2, 1e-2, rng);
    inputs["exp_avg_sq." + name] = uniform(shape, 1e-6, 1e-4, rng);
  }
  int64_t batch = 3, beam = 2, srcLen = 5, tgtLen = 4, cacheLen = 2;
  int64_t heads = config->heads(), dHead = config->d_model() / heads;
  inputs["src"] = ids(batch, srcLen, config->src_vocab(), 2, rng);
  inputs["tgt"] = ids(batch, tgtLen, config->tgt_vocab(), 1, rng);
  inputs["seed"] = HostTensor::scalar(5, DType::I64);
  inputs["step"] = HostTensor::scalar(3, DType::I64);
  inputs["tokens"] = ids(batch, beam, config->tgt_vocab(), 0, rng);
  inputs["position"] = HostTensor::scalar(cacheLen, DType::I64);
  inputs["start"] = HostTensor({batch}, DType::I64);
  inputs["start"].data = {0, 1, 2};
  for (int64_t i = 0; i < config->decoder_layers(); ++i) {
    for (const char *kv : {"k.", "v."}) {
      std::string suffix = kv + std::to_string(i);
      inputs["cross_" + suffix] =
          uniform({batch, heads, srcLen, dHead}, -1, 1, rng);
      inputs["self_" + suffix] =
          uniform({cacheLen, batch, beam, heads, dHead}, -1, 1, rng);
    }
  }
  for (const char *fn : entries) {
    auto want = before.call(fn, inputs);
    ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
    auto got = after.call(fn, inputs);
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    expectSame(*want, *got, fn);
  }
}

TEST(FuseElementwise, DeterministicAndASecondRunChangesNothing) {
  auto ctx = test::makeContext();
  auto config = presetConfig("tiny");
  ASSERT_TRUE(bool(config));
  auto module = trainable(*ctx, *config);
  ASSERT_TRUE(module);
  OwningOpRef<ModuleOp> other = module->clone();
  ASSERT_TRUE(succeeded(fuse(*module)) && succeeded(fuse(*other)));
  std::string once, again, twice;
  llvm::raw_string_ostream(once) << *module;
  llvm::raw_string_ostream(again) << *other;
  EXPECT_EQ(once, again);
  ASSERT_TRUE(succeeded(fuse(*module)));
  llvm::raw_string_ostream(twice) << *module;
  EXPECT_EQ(once, twice);
}

TEST(FuseElementwise, BaseModelFusesQuickly) {
  auto ctx = test::makeContext();
  auto config = presetConfig("base");
  ASSERT_TRUE(bool(config));
  auto module = trainable(*ctx, *config);
  ASSERT_TRUE(module);
  size_t before = topLevelOps(*module, "train_step");
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(succeeded(fuse(*module)));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << "base @train_step: " << before << " top-level ops before, "
            << topLevelOps(*module, "train_step") << " after, fused in "
            << seconds << " s\n";
  EXPECT_LT(seconds, 5.0);
}

// Per-op rounding: (x * 3) / 3 - x is 0 in f64, but not in f32 for every x,
// since x * 3 is rounded first. The region must give the unfused f32 values.
constexpr const char *kRounding = R"mlir(
func.func @main(%x: tensor<6xf32>) -> tensor<6xf32> {
  %three = loom.constant dense<3.0> : tensor<f32>
  %a = loom.mul %x, %three : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %b = loom.div %a, %three : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
  %c = loom.sub %b, %x : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %c : tensor<6xf32>
}
)mlir";

TEST(FuseElementwise, RegionRoundsLikeTheFunction) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, kRounding);
  ASSERT_TRUE(module);
  std::vector<HostTensor> args = {
      test::f32({6}, {0.1, 0.7, 1.3, 2.9, 1e-3, 5})};
  for (double &x : args[0].data)
    x = roundToKind(x, DType::F32);
  auto want = Interpreter(*module).run("main", args);
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  ASSERT_TRUE(succeeded(fuse(*module)));
  auto fn = module->lookupSymbol<func::FuncOp>("main");
  ASSERT_TRUE(isa<FusionOp>(fn.getBody().front().front()));

  auto got = Interpreter(*module).run("main", args);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  EXPECT_EQ(got->front().data, want->front().data);
  // The expected values, rounded by hand to f32 after each op.
  for (size_t i = 0; i < 6; ++i) {
    float x = float(args[0].data[i]), a = x * 3.0f, b = a / 3.0f;
    EXPECT_EQ(got->front().data[i], double(b - x)) << i;
  }
  // Some element shows the rounding; in f64 mode none does.
  EXPECT_TRUE(llvm::any_of(got->front().data, [](double v) { return v != 0; }));
  InterpreterOptions f64;
  f64.f64 = true;
  auto exact = Interpreter(*module, f64).run("main", args);
  ASSERT_TRUE(bool(exact));
  for (double v : exact->front().data)
    EXPECT_NEAR(v, 0.0, 1e-15);
}

constexpr const char *kMismatch = R"mlir(
func.func @main(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %r = loom.fusion(%x, %y) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32> {
  ^bb0(%a: tensor<?xf32>, %b: tensor<?xf32>):
    %s = loom.add %a, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    loom.yield %s : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}
)mlir";

TEST(FuseElementwise, FailureInsideARegionNamesTheRegionAndTheOp) {
  std::string message = test::runError(
      kMismatch, {test::f32({3}, {1, 2, 3}), test::f32({4}, {1, 2, 3, 4})});
  EXPECT_NE(message.find("'loom.fusion'"), std::string::npos) << message;
  EXPECT_NE(message.find("'loom.add'"), std::string::npos) << message;
}

} // namespace
