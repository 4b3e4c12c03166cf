//===- LinearTest.cpp - loom.linear and loom.add_layer_norm end to end ----===//
//
// The interpreter's fused kernels against the op sequences they replace, the
// gradient rules against finite differences, and the fusion passes on the
// whole tiny model (post-norm with and without dropout, pre-norm): fusing
// @loss before autodiff changes neither the loss nor any gradient, and every
// FFN becomes two loom.linear.
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"
#include "InterpreterTestUtil.h"

#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <random>

using namespace mlir;
using namespace loom;
using namespace loom::test;

namespace {

/// Elements uniform in [-1, 1], fixed by `seed`.
HostTensor randomF64(std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> data(shapeNumel(shape));
  for (double &v : data)
    v = dist(rng);
  return HostTensor(std::move(shape), DType::F64, std::move(data));
}

/// Runs `@name` of `module` in f64.
std::vector<HostTensor> runF64(ModuleOp module, const char *name,
                               const std::vector<HostTensor> &args) {
  InterpreterOptions options;
  options.f64 = true;
  auto results = Interpreter(module, options).run(name, args);
  if (!results) {
    ADD_FAILURE() << "@" << name << ": " << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

/// Expects `a` and `b` to agree within `rel` of the largest magnitude in `b`.
void expectClose(const HostTensor &a, const HostTensor &b, double rel,
                 const std::string &what) {
  ASSERT_EQ(a.shape, b.shape) << what;
  double scale = 0, worst = 0;
  for (double v : b.data)
    scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.data.size(); ++i)
    worst = std::max(worst, std::fabs(a.data[i] - b.data[i]));
  EXPECT_LE(worst, rel * std::max(scale, 1e-30))
      << what << ": largest difference " << worst << " at scale " << scale;
}

//===----------------------------------------------------------------------===//
// Interpreter kernels against the unfused op sequences
//===----------------------------------------------------------------------===//

struct Epilogue {
  bool bias;
  const char *activation; // "none", "relu" or "gelu"
  bool residual;
};

std::string describe(const Epilogue &e) {
  return std::string(e.bias ? "bias " : "") + e.activation +
         (e.residual ? " residual" : "");
}

const Epilogue kEpilogues[] = {
    {false, "none", false}, {true, "none", false}, {false, "relu", false},
    {true, "relu", false},  {true, "gelu", false}, {false, "none", true},
    {true, "none", true},   {false, "relu", true}, {true, "relu", true},
    {false, "gelu", true},  {true, "gelu", true},  {false, "gelu", false}};

/// `loom.linear %x, %w ...` with `e`'s epilogue: x [..., 4], w [5, 4],
/// b [5], r [..., 5]; `x` and `y` are the types of the input and result.
std::string linearOp(const Epilogue &e, const std::string &x,
                     const std::string &y, const std::string &w,
                     const std::string &b) {
  std::string op = "%y = loom.linear %x, %w";
  if (e.bias)
    op += " bias(%b : " + b + ")";
  if (e.residual)
    op += " residual(%r : " + y + ")";
  if (std::string(e.activation) != "none")
    op += " activation " + std::string(e.activation);
  return op + " : " + x + ", " + w + " -> " + y;
}

TEST(LinearInterpreter, MatchesTheUnfusedOps) {
  const std::string x = "tensor<2x3x4xf64>", y = "tensor<2x3x5xf64>",
                    w = "tensor<5x4xf64>", b = "tensor<5xf64>";
  for (const Epilogue &e : kEpilogues) {
    SCOPED_TRACE(describe(e));
    std::string sig =
        "(%x: " + x + ", %w: " + w + ", %b: " + b + ", %r: " + y + ") -> " + y;
    std::string text = "func.func @fused" + sig + " {\n  " +
                       linearOp(e, x, y, w, b) + "\n  return %y : " + y +
                       "\n}\n";
    // The same computation op by op, as the frontend writes it.
    text += "func.func @unfused" + sig + " {\n";
    text += "  %v0 = loom.matmul %x, %w {transpose_rhs} : (" + x + ", " + w +
            ") -> " + y + "\n";
    std::string last = "%v0";
    int next = 1;
    auto step = [&](const std::string &rhs) {
      std::string name = "%v" + std::to_string(next++);
      text += "  " + name + rhs + "\n";
      last = name;
    };
    if (e.bias)
      step(" = loom.add " + last + ", %b : (" + y + ", " + b + ") -> " + y);
    if (std::string(e.activation) != "none")
      step(" = loom." + std::string(e.activation) + " " + last + " : (" + y +
           ") -> " + y);
    if (e.residual)
      step(" = loom.add %r, " + last + " : (" + y + ", " + y + ") -> " + y);
    text += "  return " + last + " : " + y + "\n}\n";

    auto ctx = makeContext();
    auto module = parse(*ctx, text);
    ASSERT_TRUE(module);
    std::vector<HostTensor> args = {randomF64({2, 3, 4}, 1),
                                    randomF64({5, 4}, 2), randomF64({5}, 3),
                                    randomF64({2, 3, 5}, 4)};
    auto fused = runF64(*module, "fused", args);
    auto unfused = runF64(*module, "unfused", args);
    ASSERT_EQ(fused.size(), 1u);
    ASSERT_EQ(unfused.size(), 1u);
    expectValues(fused[0], {2, 3, 5}, unfused[0].data, 1e-12);
  }
}

TEST(LinearInterpreter, RowVectorInput) {
  // x [K] is one row: y[n] = sum_k x[k] w[n, k] + b[n], by hand.
  HostTensor x = f64({3}, {1, 2, 3}), w = f64({2, 3}, {1, 0, -1, 0.5, 2, 1}),
             b = f64({2}, {0.25, -4});
  HostTensor y = runOne(R"(
func.func @main(%x: tensor<3xf64>, %w: tensor<2x3xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {
  %y = loom.linear %x, %w bias(%b : tensor<2xf64>) activation relu : tensor<3xf64>, tensor<2x3xf64> -> tensor<2xf64>
  return %y : tensor<2xf64>
})",
                        {x, w, b}, /*f64Mode=*/true);
  expectValues(y, {2}, {0.0, 0.5 + 4 + 3 - 4});
}

TEST(LinearInterpreter, ResidualOfAnotherShapeIsAnError) {
  std::string message =
      runError(R"(
func.func @main(%x: tensor<?x3xf32>, %w: tensor<2x3xf32>, %r: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %y = loom.linear %x, %w residual(%r : tensor<?x2xf32>) : tensor<?x3xf32>, tensor<2x3xf32> -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
})",
               {f32({4, 3}, Values(12, 1.0)), f32({2, 3}, Values(6, 1.0)),
                f32({1, 2}, {1, 1})});
  EXPECT_NE(message.find("'loom.linear'"), std::string::npos) << message;
  EXPECT_NE(message.find("residual must be 4x2, got 1x2"), std::string::npos)
      << message;
}

TEST(AddLayerNormInterpreter, MatchesAddThenLayerNorm) {
  const char *text = R"(
func.func @fused(%x: tensor<2x3x6xf64>, %r: tensor<2x3x6xf64>, %g: tensor<6xf64>, %b: tensor<6xf64>) -> (tensor<2x3x6xf64>, tensor<2x3x6xf64>) {
  %s, %n = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<2x3x6xf64>, tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64>) -> (tensor<2x3x6xf64>, tensor<2x3x6xf64>)
  return %s, %n : tensor<2x3x6xf64>, tensor<2x3x6xf64>
}
func.func @unfused(%x: tensor<2x3x6xf64>, %r: tensor<2x3x6xf64>, %g: tensor<6xf64>, %b: tensor<6xf64>) -> (tensor<2x3x6xf64>, tensor<2x3x6xf64>) {
  %s = loom.add %x, %r : (tensor<2x3x6xf64>, tensor<2x3x6xf64>) -> tensor<2x3x6xf64>
  %n = loom.layer_norm %s, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64>) -> tensor<2x3x6xf64>
  return %s, %n : tensor<2x3x6xf64>, tensor<2x3x6xf64>
})";
  auto ctx = makeContext();
  auto module = parse(*ctx, text);
  ASSERT_TRUE(module);
  std::vector<HostTensor> args = {randomF64({2, 3, 6}, 5),
                                  randomF64({2, 3, 6}, 6), randomF64({6}, 7),
                                  randomF64({6}, 8)};
  auto fused = runF64(*module, "fused", args);
  auto unfused = runF64(*module, "unfused", args);
  ASSERT_EQ(fused.size(), 2u);
  ASSERT_EQ(unfused.size(), 2u);
  expectValues(fused[0], {2, 3, 6}, unfused[0].data, 1e-12);
  expectValues(fused[1], {2, 3, 6}, unfused[1].data, 1e-12);
}

TEST(AddLayerNormInterpreter, OperandsOfDifferentShapesAreAnError) {
  std::string message =
      runError(R"(
func.func @main(%x: tensor<?x2xf32>, %r: tensor<?x2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<?x2xf32> {
  %s, %n = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x2xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>)
  return %n : tensor<?x2xf32>
})",
               {f32({3, 2}, Values(6, 1.0)), f32({1, 2}, {1, 2}),
                f32({2}, {1, 1}), f32({2}, {0, 0})});
  EXPECT_NE(message.find("input 3x2 and residual 1x2 differ in shape"),
            std::string::npos)
      << message;
}

//===----------------------------------------------------------------------===//
// Gradient rules against finite differences
//===----------------------------------------------------------------------===//

TEST(LinearGradient, EveryEpilogue) {
  const std::string x = "tensor<2x3x4xf64>", y = "tensor<2x3x5xf64>",
                    w = "tensor<5x4xf64>", b = "tensor<5xf64>";
  unsigned seed = 10;
  for (const Epilogue &e : kEpilogues) {
    SCOPED_TRACE(describe(e));
    GradientCheck check(seed++);
    check.uniform("x", {2, 3, 4}, -1, 1, DType::F64)
        .uniform("w", {5, 4}, -1, 1, DType::F64);
    if (e.bias)
      check.uniform("b", {5}, -1, 1, DType::F64);
    if (e.residual)
      check.uniform("r", {2, 3, 5}, -1, 1, DType::F64);
    check.op(linearOp(e, x, y, w, b)).check({2, 3, 5}, "f64");
  }
}

TEST(LinearGradient, InputsOfRankOneAndTwo) {
  GradientCheck(30)
      .uniform("x", {4}, -1, 1, DType::F64)
      .uniform("w", {3, 4}, -1, 1, DType::F64)
      .uniform("b", {3}, -1, 1, DType::F64)
      .op("%y = loom.linear %x, %w bias(%b : tensor<3xf64>) activation gelu "
          ": tensor<4xf64>, tensor<3x4xf64> -> tensor<3xf64>")
      .check({3}, "f64");
  GradientCheck(31)
      .uniform("x", {6, 4}, -1, 1, DType::F64)
      .uniform("w", {3, 4}, -1, 1, DType::F64)
      .uniform("r", {6, 3}, -1, 1, DType::F64)
      .op("%y = loom.linear %x, %w residual(%r : tensor<6x3xf64>) activation "
          "relu : tensor<6x4xf64>, tensor<3x4xf64> -> tensor<6x3xf64>")
      .check({6, 3}, "f64");
}

TEST(LinearGradient, DynamicDims) {
  // Dynamic rows flatten with -1; a dynamic weight takes the batched
  // product summed over the batch instead.
  GradientCheck(32)
      .values("x", {2, 3, 4}, randomF64({2, 3, 4}, 33).data, DType::F64,
              {-1, -1, 4})
      .uniform("w", {5, 4}, -1, 1, DType::F64)
      .uniform("b", {5}, -1, 1, DType::F64)
      .op("%y = loom.linear %x, %w bias(%b : tensor<5xf64>) activation gelu "
          ": tensor<?x?x4xf64>, tensor<5x4xf64> -> tensor<?x?x5xf64>")
      .check({2, 3, 5}, "f64", "tensor<?x?x5xf64>");
  GradientCheck(34)
      .uniform("x", {2, 3, 4}, -1, 1, DType::F64)
      .values("w", {5, 4}, randomF64({5, 4}, 35).data, DType::F64, {-1, -1})
      .uniform("r", {2, 3, 5}, -1, 1, DType::F64)
      .op("%y = loom.linear %x, %w residual(%r : tensor<2x3x5xf64>) "
          ": tensor<2x3x4xf64>, tensor<?x?xf64> -> tensor<2x3x5xf64>")
      .check({2, 3, 5}, "f64");
}

TEST(AddLayerNormGradient, BothResults) {
  // The sum is used again (as the residual stream of a pre-norm layer), so
  // both results carry gradient to both addends.
  GradientCheck(40)
      .uniform("x", {2, 3, 6}, -1, 1, DType::F64)
      .uniform("r", {2, 3, 6}, -1, 1, DType::F64)
      .uniform("g", {6}, 0.5, 1.5, DType::F64)
      .uniform("b", {6}, -1, 1, DType::F64)
      .op("%s, %n = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-5 : "
          "f64} : (tensor<2x3x6xf64>, tensor<2x3x6xf64>, tensor<6xf64>, "
          "tensor<6xf64>) -> (tensor<2x3x6xf64>, tensor<2x3x6xf64>)")
      .op("%t = loom.mul %s, %s : (tensor<2x3x6xf64>, tensor<2x3x6xf64>) -> "
          "tensor<2x3x6xf64>")
      .op("%y = loom.add %n, %t : (tensor<2x3x6xf64>, tensor<2x3x6xf64>) -> "
          "tensor<2x3x6xf64>")
      .check({2, 3, 6}, "f64");
}

TEST(AddLayerNormGradient, NormalizedResultOnly) {
  GradientCheck(41)
      .uniform("x", {4, 5}, -1, 1, DType::F64)
      .uniform("r", {4, 5}, -1, 1, DType::F64)
      .uniform("g", {5}, 0.5, 1.5, DType::F64)
      .uniform("b", {5}, -1, 1, DType::F64)
      .op("%s, %y = loom.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-3 : "
          "f64} : (tensor<4x5xf64>, tensor<4x5xf64>, tensor<5xf64>, "
          "tensor<5xf64>) -> (tensor<4x5xf64>, tensor<4x5xf64>)")
      .check({4, 5}, "f64");
}

//===----------------------------------------------------------------------===//
// The tiny model, fused before autodiff
//===----------------------------------------------------------------------===//

TransformerConfig tiny(double dropout, bool preNorm = false) {
  auto config = presetConfig("tiny");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  config->set_dropout(dropout);
  if (preNorm) {
    config->set_norm(TransformerConfig::PRE);
    config->set_final_norm(true);
  }
  return *config;
}

/// The model module with @loss fused (when `fuse`) and then the training
/// pipeline run.
OwningOpRef<ModuleOp>
trainingModule(MLIRContext &ctx, const TransformerConfig &config, bool fuse) {
  auto module = buildModelModule(ctx, config);
  EXPECT_TRUE(module);
  if (!module)
    return nullptr;
  if (fuse) {
    auto loss = module->lookupSymbol<func::FuncOp>("loss");
    PassManager pm(&ctx, func::FuncOp::getOperationName());
    pm.addPass(createLoomFuseLayerNorm());
    pm.addPass(createLoomFuseLinear());
    EXPECT_TRUE(succeeded(pm.run(loss)));
  }
  TrainingPipelineOptions options;
  options.dModel = config.d_model();
  EXPECT_TRUE(succeeded(runTrainingPipeline(*module, options)));
  EXPECT_TRUE(succeeded(verify(*module)));
  return module;
}

std::string printed(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

/// The parameter name of `v` when it is an argument of @loss.
std::string paramName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return "";
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr);
  return name ? name.str() : "";
}

void expectFusedFeedForwards(ModuleOp module, const TransformerConfig &c) {
  auto loss = module.lookupSymbol<func::FuncOp>("loss");
  std::map<std::string, LinearOp> byWeight;
  int64_t addNorms = 0;
  loss.walk([&](Operation *op) {
    if (auto linear = dyn_cast<LinearOp>(op))
      byWeight[paramName(linear.getWeight())] = linear;
    addNorms += isa<AddLayerNormOp>(op);
    EXPECT_FALSE(isa<ReluOp>(op)) << "left unfused: " << printed(op);
    // A norm left alone must not read a residual sum.
    if (auto norm = dyn_cast<LayerNormOp>(op))
      if (auto add = norm.getInput().getDefiningOp<AddOp>())
        EXPECT_NE(add.getLhs().getType(), add.getRhs().getType())
            << "left unfused: " << printed(op);
    if (auto matmul = dyn_cast<MatmulOp>(op))
      EXPECT_NE(cast<RankedTensorType>(matmul.getRhs().getType()).getRank(), 2)
          << "a dense layer left unfused: " << printed(op);
  });
  std::vector<std::string> layers;
  for (int64_t i = 0; i < c.encoder_layers(); ++i)
    layers.push_back("encoder.layers." + std::to_string(i));
  for (int64_t i = 0; i < c.decoder_layers(); ++i)
    layers.push_back("decoder.layers." + std::to_string(i));
  for (const std::string &layer : layers) {
    LinearOp first = byWeight[layer + ".linear1.weight"];
    LinearOp second = byWeight[layer + ".linear2.weight"];
    ASSERT_TRUE(first && second) << layer << "'s FFN is not two loom.linear";
    EXPECT_EQ(first.getActivation(), Activation::relu) << layer;
    EXPECT_EQ(paramName(first.getBias()), layer + ".linear1.bias");
    EXPECT_EQ(second.getActivation(), Activation::none) << layer;
    EXPECT_EQ(paramName(second.getBias()), layer + ".linear2.bias");
    EXPECT_EQ(second.getInput().getDefiningOp() == first.getOperation(),
              c.dropout() == 0.0)
        << layer << ": linear2 reads linear1 directly exactly without dropout";
  }
  // Post-norm: every sublayer's norm(x + sublayer(x)) became one op.
  // Pre-norm: every norm but the first of each stack reads a residual sum.
  int64_t sublayers = 2 * c.encoder_layers() + 3 * c.decoder_layers();
  if (c.norm() == TransformerConfig::PRE)
    EXPECT_EQ(addNorms, sublayers + 2 * c.final_norm() - 2);
  else
    EXPECT_EQ(addNorms, sublayers);
}

void expectSameLossAndGradients(const TransformerConfig &config) {
  auto ctx = makeContext();
  auto plain = trainingModule(*ctx, config, /*fuse=*/false);
  auto fused = trainingModule(*ctx, config, /*fuse=*/true);
  ASSERT_TRUE(plain && fused);
  expectFusedFeedForwards(*fused, config);

  InterpreterOptions options;
  options.f64 = true;
  InterpretedModel reference(*plain, options), candidate(*fused, options);
  reference.initParameters(7);
  candidate.parameters() = reference.parameters();
  NamedTensors inputs = {{"src", padBatch({{3, 4, 5, 6, 7}, {8, 9, 10}})},
                         {"tgt", padBatch({{1, 11, 12, 13, 2}, {1, 14, 2}})},
                         {"seed", HostTensor::scalar(1234, DType::I64)}};
  for (const char *fn : {"loss", "loss_grad"}) {
    auto want = reference.call(fn, inputs);
    auto got = candidate.call(fn, inputs);
    ASSERT_TRUE(!!want) << llvm::toString(want.takeError());
    ASSERT_TRUE(!!got) << llvm::toString(got.takeError());
    ASSERT_EQ(want->size(), got->size());
    for (const auto &[name, tensor] : *want) {
      ASSERT_TRUE(got->count(name)) << "@" << fn << " lacks " << name;
      expectClose(got->at(name), tensor, 1e-9, std::string(fn) + " " + name);
    }
  }
}

TEST(FuseTinyModel, WithoutDropout) { expectSameLossAndGradients(tiny(0.0)); }

TEST(FuseTinyModel, WithDropout) { expectSameLossAndGradients(tiny(0.1)); }

// Pre-norm: each fused sum also feeds the next residual connection.
TEST(FuseTinyModel, PreNorm) {
  expectSameLossAndGradients(tiny(0.0, /*preNorm=*/true));
}

} // namespace
