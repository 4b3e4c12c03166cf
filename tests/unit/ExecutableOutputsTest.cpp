//===- ExecutableOutputsTest.cpp - What a function returns, compiled ------===//
//
// A compiled entry point returns fresh tensors whatever its results are: a
// value a step computes, an argument, a constant, a value returned twice,
// a view of an argument. The last four are not written by a step of their
// own, so the executable writer must copy them into their outputs; an
// imported model (ONNX's Shape of a static tensor folds to a constant)
// returns such values where a model Loom builds never does. A view of a
// result nothing else reads needs no copy: the result is placed on the
// output's bytes.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/ExecutableWriter.h"
#include "passes/Pipeline.h"
#include "runtime/Session.h"

#include "DeviceTestUtil.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <optional>

using namespace loom;

namespace {

constexpr const char *kReturns = R"mlir(
func.func @forward(%x: tensor<2x3xf32> {loom.input = "x"})
    -> (tensor<3xi64> {loom.output = "constant"},
        tensor<2x3xf32> {loom.output = "argument"},
        tensor<2x3xf32> {loom.output = "sum"},
        tensor<2x3xf32> {loom.output = "sum_again"},
        tensor<6xf32> {loom.output = "view"},
        tensor<2xf32> {loom.output = "constant_f32"}) {
  %c = loom.constant dense<[3, 4, 5]> : tensor<3xi64>
  %f = loom.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %s = loom.add %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %v = loom.reshape %x [6] : (tensor<2x3xf32>) -> tensor<6xf32>
  return %c, %x, %s, %s, %v, %f
      : tensor<3xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
        tensor<6xf32>, tensor<2xf32>
}
)mlir";

/// `text` compiled for the CPU without differentiation; nullopt (after a
/// test failure) when it does not compile.
std::optional<runtime::Executable> compiled(const char *text) {
  auto ctx = test::makeContext();
  auto module = test::parse(*ctx, text);
  EXPECT_TRUE(module);
  if (!module)
    return std::nullopt;
  CompilePipelineOptions options;
  options.differentiate = false;
  if (mlir::failed(runCompilePipeline(*module, options))) {
    ADD_FAILURE() << "the pipeline failed";
    return std::nullopt;
  }
  CpuExecutableOptions exeOptions;
  exeOptions.bounds = {options.maxTokens, options.maxLen, options.maxBatch};
  auto exe = writeCpuExecutable(*module, exeOptions);
  if (mlir::failed(exe)) {
    ADD_FAILURE() << "no executable was written";
    return std::nullopt;
  }
  return std::move(*exe);
}

TEST(ExecutableOutputs, EveryKindOfResultComesBackWithItsValues) {
  std::optional<runtime::Executable> exe = compiled(kReturns);
  ASSERT_TRUE(exe);
  auto session = test::cpuSession(std::move(*exe), 1);
  ASSERT_TRUE(session);

  auto x = runtime::Tensor::host(DType::F32, {2, 3});
  ASSERT_TRUE(bool(x));
  for (int i = 0; i < 6; ++i)
    x->f32()[i] = float(i) + 0.25f;
  auto out = session->run("forward", {x->ref()});
  ASSERT_TRUE(bool(out)) << out.error();
  ASSERT_EQ(out->size(), 6u);
  const int64_t *c = static_cast<const int64_t *>((*out)[0].tensor.data());
  EXPECT_EQ(std::vector<int64_t>(c, c + 3), (std::vector<int64_t>{3, 4, 5}));
  for (int i = 0; i < 6; ++i) {
    float xi = float(i) + 0.25f;
    EXPECT_EQ((*out)[1].tensor.f32()[i], xi) << "argument " << i;
    EXPECT_EQ((*out)[2].tensor.f32()[i], 2 * xi) << "sum " << i;
    EXPECT_EQ((*out)[3].tensor.f32()[i], 2 * xi) << "sum again " << i;
    EXPECT_EQ((*out)[4].tensor.f32()[i], xi) << "view " << i;
  }
  EXPECT_EQ((*out)[5].tensor.f32()[0], 1.5f);
  EXPECT_EQ((*out)[5].tensor.f32()[1], -2.0f);
  // Each output is its own tensor: writing one leaves the input alone.
  (*out)[1].tensor.f32()[0] = 99;
  EXPECT_EQ(x->f32()[0], 0.25f);
}

constexpr const char *kReturnsViews = R"mlir(
func.func @views(%x: tensor<2x3xf32> {loom.input = "x"})
    -> (tensor<6xf32> {loom.output = "reshaped"},
        tensor<6xf32> {loom.output = "reshaped_of_returned"},
        tensor<2x3xf32> {loom.output = "returned"}) {
  %p = loom.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = loom.reshape %p [6] : (tensor<2x3xf32>) -> tensor<6xf32>
  %q = loom.add %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %rq = loom.reshape %q [6] : (tensor<2x3xf32>) -> tensor<6xf32>
  return %r, %rq, %q : tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>
}
)mlir";

/// Steps of `entry` that run kernel `symbol`.
int stepsOf(const runtime::Executable &exe, const std::string &entry,
            const std::string &symbol) {
  int n = 0;
  for (const runtime::EntryPoint &e : exe.entry_points())
    if (e.name() == entry)
      for (const runtime::Step &step : e.steps())
        n += exe.kernels(step.kernel()).symbol() == symbol;
  return n;
}

// A reshape returned of a result nothing else reads (decode_step's
// log_probs) is written by the result's producer straight into the output;
// a reshape of a result also returned on its own still needs its copy.
TEST(ExecutableOutputs, AReturnedReshapeIsWrittenInPlace) {
  std::optional<runtime::Executable> exe = compiled(kReturnsViews);
  ASSERT_TRUE(exe);
  EXPECT_EQ(stepsOf(*exe, "views", "copy"), 1);
  auto session = test::cpuSession(std::move(*exe), 1);
  ASSERT_TRUE(session);

  auto x = runtime::Tensor::host(DType::F32, {2, 3});
  ASSERT_TRUE(bool(x));
  for (int i = 0; i < 6; ++i)
    x->f32()[i] = float(i) - 2.5f;
  // Twice: the second call gets the first one's outputs back as spares.
  for (int call = 0; call < 2; ++call) {
    auto out = session->run("views", {x->ref()});
    ASSERT_TRUE(bool(out)) << out.error();
    ASSERT_EQ(out->size(), 3u);
    EXPECT_EQ((*out)[0].tensor.shape(), (std::vector<int64_t>{6}));
    for (int i = 0; i < 6; ++i) {
      float xi = float(i) - 2.5f;
      EXPECT_EQ((*out)[0].tensor.f32()[i], xi * xi) << "reshaped " << i;
      EXPECT_EQ((*out)[1].tensor.f32()[i], 2 * xi) << "of returned " << i;
      EXPECT_EQ((*out)[2].tensor.f32()[i], 2 * xi) << "returned " << i;
    }
  }
}

constexpr const char *kReturnsStateView = R"mlir(
func.func @train_step(%w: tensor<2x3xf32> {loom.param = "w"},
                      %x: tensor<6xf32> {loom.input = "x"})
    -> (tensor<2x3xf32> {loom.output = "param.w"}) {
  %s = loom.add %x, %x : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %r = loom.reshape %s [2, 3] : (tensor<6xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
)mlir";

// Not for an output written over state: its copy comes after every step,
// any of which may still read the state it replaces.
TEST(ExecutableOutputs, AReshapeWrittenOverStateKeepsItsCopy) {
  std::optional<runtime::Executable> exe = compiled(kReturnsStateView);
  ASSERT_TRUE(exe);
  EXPECT_EQ(stepsOf(*exe, "train_step", "copy"), 1);
}

constexpr const char *kTwoSizes = R"mlir(
func.func @rows(%x: tensor<?x?xf32> {loom.input = "x", loom.dims = ["batch", "len"]},
                %y: tensor<?x3xf32> {loom.input = "y", loom.dims = ["batch", ""]})
    -> (tensor<?x?xf32> {loom.output = "x2"},
        tensor<?xf32> {loom.output = "y_flat"}) {
  %x2 = loom.add %x, %x : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %m = loom.mul %y, %y : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %f = loom.reshape %m [-1] : (tensor<?x3xf32>) -> tensor<?xf32>
  return %x2, %f : tensor<?x?xf32>, tensor<?xf32>
}
)mlir";

// A session keeps the last call's shapes for the buffers whose sizes did not
// change (a decode step's, but for the caches, which grow): calls that
// change one size, the other, both or neither all come back in their own
// shapes with their own values.
TEST(ExecutableOutputs, ShapesFollowEverySizeFromCallToCall) {
  std::optional<runtime::Executable> exe = compiled(kTwoSizes);
  ASSERT_TRUE(exe);
  auto session = test::cpuSession(std::move(*exe), 1);
  ASSERT_TRUE(session);

  const std::vector<std::pair<int64_t, int64_t>> calls = {
      {2, 5}, {2, 5}, {2, 7}, {4, 7}, {3, 1}, {3, 1}, {2, 5}};
  for (auto [batch, len] : calls) {
    auto x = runtime::Tensor::host(DType::F32, {batch, len});
    auto y = runtime::Tensor::host(DType::F32, {batch, 3});
    ASSERT_TRUE(bool(x) && bool(y));
    for (int64_t i = 0; i < batch * len; ++i)
      x->f32()[i] = float(i + batch);
    for (int64_t i = 0; i < batch * 3; ++i)
      y->f32()[i] = float(i - len);
    auto out = session->run("rows", {x->ref(), y->ref()});
    ASSERT_TRUE(bool(out)) << out.error();
    ASSERT_EQ((*out)[0].tensor.shape(), (std::vector<int64_t>{batch, len}));
    ASSERT_EQ((*out)[1].tensor.shape(), (std::vector<int64_t>{batch * 3}));
    for (int64_t i = 0; i < batch * len; ++i)
      EXPECT_EQ((*out)[0].tensor.f32()[i], 2 * float(i + batch))
          << batch << "x" << len << " at " << i;
    for (int64_t i = 0; i < batch * 3; ++i)
      EXPECT_EQ((*out)[1].tensor.f32()[i], float(i - len) * float(i - len))
          << batch << "x" << len << " at " << i;
  }
}

} // namespace
