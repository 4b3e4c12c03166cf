//===- InterpreterShapeTest.cpp - The interpreter: shape and data movement ===//
//
// Expected values come from naive index arithmetic written here.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

using namespace loom;
using namespace loom::test;

namespace {

TEST(InterpreterShape, ReshapeCopiesAndInfersDims) {
  const char *text = R"(
func.func @main(%x: tensor<?x6xf32>) -> (tensor<?x2x?xf32>, tensor<?xf32>) {
  %0 = loom.reshape %x [0, 2, -1] : (tensor<?x6xf32>) -> tensor<?x2x?xf32>
  %1 = loom.reshape %x [-1] : (tensor<?x6xf32>) -> tensor<?xf32>
  return %0, %1 : tensor<?x2x?xf32>, tensor<?xf32>
}
)";
  Values x = ramp(12);
  auto r = interpret(text, {f32({2, 6}, x)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  EXPECT_EQ((*r)[0].shape, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ((*r)[1].shape, (std::vector<int64_t>{12}));
  EXPECT_EQ((*r)[0].data, (*r)[1].data); // row-major order is kept
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ((*r)[1].data[i], double(float(x[i])));
}

TEST(InterpreterShape, ReshapeCountMismatchIsAnError) {
  const char *text = R"(
func.func @main(%x: tensor<?x6xf32>) -> tensor<4x5xf32> {
  %0 = loom.reshape %x [4, 5] : (tensor<?x6xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
)";
  std::string msg = runError(text, {f32({3, 6}, ramp(18))});
  EXPECT_NE(msg.find("'loom.reshape'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3x6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4x5"), std::string::npos) << msg;
  const char *infer = R"(
func.func @main(%x: tensor<?xf32>) -> tensor<?x4xf32> {
  %0 = loom.reshape %x [-1, 4] : (tensor<?xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
)";
  std::string msg2 = runError(infer, {f32({6}, ramp(6))});
  EXPECT_NE(msg2.find("cannot reshape 6"), std::string::npos) << msg2;
}

TEST(InterpreterShape, ReshapeAsAndExpandDims) {
  const char *text = R"(
func.func @main(%x: tensor<6xf64>, %like: tensor<3x2xi64>) -> (tensor<3x2xf64>, tensor<1x6x1xf64>) {
  %0 = loom.reshape_as %x, %like : (tensor<6xf64>, tensor<3x2xi64>) -> tensor<3x2xf64>
  %1 = loom.expand_dims %x [0, 2] : (tensor<6xf64>) -> tensor<1x6x1xf64>
  return %0, %1 : tensor<3x2xf64>, tensor<1x6x1xf64>
}
)";
  Values x = ramp(6);
  auto r = interpret(text, {f64({6}, x), i64({3, 2}, Values(6, 0))});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {3, 2}, x, 0);
  expectValues((*r)[1], {1, 6, 1}, x, 0);
  EXPECT_EQ((*r)[0].kind, DType::F64);
}

TEST(InterpreterShape, Transpose) {
  const char *text = R"(
func.func @main(%x: tensor<2x3x4xf64>) -> tensor<4x2x3xf64> {
  %0 = loom.transpose %x [2, 0, 1] : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
  return %0 : tensor<4x2x3xf64>
}
)";
  Values x = ramp(24), expected;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        expected.push_back(x[i * 12 + j * 4 + k]);
  expectValues(runOne(text, {f64({2, 3, 4}, x)}), {4, 2, 3}, expected, 0);
}

TEST(InterpreterShape, SliceCountsFromTheEnd) {
  const char *text = R"(
func.func @main(%x: tensor<2x?xf64>) -> (tensor<2x?xf64>, tensor<2x?xf64>, tensor<2x2xf64>, tensor<1x?xf64>) {
  %0 = loom.slice %x {dim = 1 : i64, start = 1 : i64, end = 0 : i64} : (tensor<2x?xf64>) -> tensor<2x?xf64>
  %1 = loom.slice %x {dim = 1 : i64, start = 0 : i64, end = -1 : i64} : (tensor<2x?xf64>) -> tensor<2x?xf64>
  %2 = loom.slice %x {dim = 1 : i64, start = -3 : i64, end = -1 : i64} : (tensor<2x?xf64>) -> tensor<2x2xf64>
  %3 = loom.slice %x {dim = 0 : i64, start = 1 : i64, end = 2 : i64} : (tensor<2x?xf64>) -> tensor<1x?xf64>
  return %0, %1, %2, %3 : tensor<2x?xf64>, tensor<2x?xf64>, tensor<2x2xf64>, tensor<1x?xf64>
}
)";
  Values x = ramp(10);
  auto cols = [&](int from, int to) {
    Values v;
    for (int i = 0; i < 2; ++i)
      for (int j = from; j < to; ++j)
        v.push_back(x[i * 5 + j]);
    return v;
  };
  auto r = interpret(text, {f64({2, 5}, x)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 4}, cols(1, 5), 0);
  expectValues((*r)[1], {2, 4}, cols(0, 4), 0);
  expectValues((*r)[2], {2, 2}, cols(2, 4), 0);
  expectValues((*r)[3], {1, 5}, Values(x.begin() + 5, x.end()), 0);
  // A dynamic dim too short for the range is caught at run time.
  std::string msg = runError(text, {f64({2, 2}, ramp(4))});
  EXPECT_NE(msg.find("'loom.slice'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2x2"), std::string::npos) << msg;
}

TEST(InterpreterShape, SliceGradIsTheAdjointOfSlice) {
  const char *text = R"(
func.func @main(%g: tensor<2x2xf64>, %like: tensor<2x5xf32>) -> tensor<2x5xf64> {
  %0 = loom.slice_grad %g, %like {dim = 1 : i64, start = -3 : i64, end = -1 : i64} : (tensor<2x2xf64>, tensor<2x5xf32>) -> tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}
)";
  Values g = {1, 2, 3, 4};
  expectValues(runOne(text, {f64({2, 2}, g), f32({2, 5}, Values(10, 9))}),
               {2, 5}, {0, 0, 1, 2, 0, 0, 0, 3, 4, 0}, 0);
}

TEST(InterpreterShape, Concat) {
  const char *text = R"(
func.func @main(%a: tensor<2x?xf64>, %b: tensor<2x1xf64>) -> tensor<2x?xf64> {
  %0 = loom.concat %a, %b, %a {dim = 1 : i64} : (tensor<2x?xf64>, tensor<2x1xf64>, tensor<2x?xf64>) -> tensor<2x?xf64>
  return %0 : tensor<2x?xf64>
}
)";
  Values a = {1, 2, 3, 4}, b = {-1, -2};
  expectValues(runOne(text, {f64({2, 2}, a), f64({2, 1}, b)}), {2, 5},
               {1, 2, -1, 1, 2, 3, 4, -2, 3, 4}, 0);
  const char *rows = R"(
func.func @main(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>) -> tensor<?x?xf64> {
  %0 = loom.concat %a, %b {dim = 0 : i64} : (tensor<?x?xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
  return %0 : tensor<?x?xf64>
}
)";
  std::string msg = runError(rows, {f64({2, 2}, a), f64({1, 3}, ramp(3))});
  EXPECT_NE(msg.find("'loom.concat'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2x2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1x3"), std::string::npos) << msg;
}

TEST(InterpreterShape, BroadcastAsAndSumTo) {
  const char *text = R"(
func.func @main(%x: tensor<3x1xf64>, %like: tensor<2x3x4xf32>) -> (tensor<2x3x4xf64>, tensor<3x1xf64>) {
  %0 = loom.broadcast_as %x, %like : (tensor<3x1xf64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf64>
  %1 = loom.sum_to %0, %x : (tensor<2x3x4xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
  return %0, %1 : tensor<2x3x4xf64>, tensor<3x1xf64>
}
)";
  Values x = {1, -2, 5}, b;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        b.push_back(x[j]);
  auto r = interpret(text, {f64({3, 1}, x), f32({2, 3, 4}, Values(24, 0))});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 3, 4}, b, 0);
  // Each element was copied 2*4 times.
  expectValues((*r)[1], {3, 1}, {8, -16, 40}, 0);

  const char *sum = R"(
func.func @main(%x: tensor<2x3x4xf64>, %like: tensor<1x4xf64>) -> tensor<1x4xf64> {
  %0 = loom.sum_to %x, %like : (tensor<2x3x4xf64>, tensor<1x4xf64>) -> tensor<1x4xf64>
  return %0 : tensor<1x4xf64>
}
)";
  Values y = ramp(24), s(4, 0);
  for (int i = 0; i < 24; ++i)
    s[i % 4] += y[i];
  expectValues(runOne(sum, {f64({2, 3, 4}, y), f64({1, 4}, Values(4, 0))}),
               {1, 4}, s, 1e-12);

  const char *bad = R"(
func.func @main(%x: tensor<?xf64>, %like: tensor<2x?xf64>) -> tensor<2x?xf64> {
  %0 = loom.broadcast_as %x, %like : (tensor<?xf64>, tensor<2x?xf64>) -> tensor<2x?xf64>
  return %0 : tensor<2x?xf64>
}
)";
  std::string msg = runError(bad, {f64({3}, ramp(3)), f64({2, 4}, ramp(8))});
  EXPECT_NE(msg.find("'loom.broadcast_as'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot broadcast 3 to 2x4"), std::string::npos) << msg;
}

const char *kGather = R"(
func.func @main(%table: tensor<4x3xf64>, %ids: tensor<?x?xi64>) -> tensor<?x?x3xf64> {
  %0 = loom.gather %table, %ids : (tensor<4x3xf64>, tensor<?x?xi64>) -> tensor<?x?x3xf64>
  return %0 : tensor<?x?x3xf64>
}
)";

TEST(InterpreterShape, GatherRows) {
  Values table = ramp(12), ids = {3, 0, 3, 1}, expected;
  for (double id : ids)
    for (int c = 0; c < 3; ++c)
      expected.push_back(table[int(id) * 3 + c]);
  expectValues(runOne(kGather, {f64({4, 3}, table), i64({2, 2}, ids)}),
               {2, 2, 3}, expected, 0);
}

TEST(InterpreterShape, GatherRejectsOutOfRangeId) {
  for (double bad : {4.0, -1.0}) {
    std::string msg =
        runError(kGather, {f64({4, 3}, ramp(12)), i64({1, 2}, {0, bad})});
    EXPECT_NE(msg.find("'loom.gather'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("id " + std::to_string(int(bad))), std::string::npos)
        << msg;
  }
}

TEST(InterpreterShape, ScatterAddAccumulatesRepeatedIds) {
  const char *text = R"(
func.func @main(%u: tensor<3x2xf64>, %ids: tensor<3xi32>, %like: tensor<4x2xf64>) -> tensor<4x2xf64> {
  %0 = loom.scatter_add %u, %ids, %like : (tensor<3x2xf64>, tensor<3xi32>, tensor<4x2xf64>) -> tensor<4x2xf64>
  return %0 : tensor<4x2xf64>
}
)";
  Values u = {1, 2, 10, 20, 100, 200}, ids = {2, 0, 2};
  Values expected(8, 0);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 2; ++c)
      expected[int(ids[i]) * 2 + c] += u[i * 2 + c];
  expectValues(
      runOne(text, {f64({3, 2}, u), i32({3}, ids), f64({4, 2}, Values(8, 5))}),
      {4, 2}, expected, 0);
  std::string msg = runError(
      text, {f64({3, 2}, u), i32({3}, {0, 9, 1}), f64({4, 2}, Values(8, 0))});
  EXPECT_NE(msg.find("'loom.scatter_add'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("id 9"), std::string::npos) << msg;
}

TEST(InterpreterShape, OneHot) {
  const char *text = R"(
func.func @main(%ids: tensor<2x2xi64>) -> tensor<2x2x3xf32> {
  %0 = loom.one_hot %ids {depth = 3 : i64} : tensor<2x2xi64> -> tensor<2x2x3xf32>
  return %0 : tensor<2x2x3xf32>
}
)";
  Values ids = {2, 0, 1, 2}, expected;
  for (double id : ids)
    for (int c = 0; c < 3; ++c)
      expected.push_back(c == id ? 1.0 : 0.0);
  expectValues(runOne(text, {i64({2, 2}, ids)}), {2, 2, 3}, expected, 0);
}

} // namespace
