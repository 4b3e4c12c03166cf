//===- InterpreterTest.cpp -----------------------------------------------===//
//
// Argument checks, errors, rounding, dynamic shapes and the elementwise ops.
// Expected values come from naive loops over explicit indices.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

using namespace loom;
using namespace loom::test;

namespace {

const char *kAdd = R"(
func.func @main(%a: tensor<?x3xf32>, %b: tensor<3xf32>) -> tensor<?x3xf32> {
  %0 = loom.add %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
)";

TEST(Interpreter, DynamicDimTakesAnySize) {
  for (int64_t rows : {1, 2, 5}) {
    Values a = ramp(rows * 3), b = {10, 20, 30};
    Values expected(rows * 3);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 3; ++j)
        expected[i * 3 + j] = a[i * 3 + j] + b[j];
    HostTensor r = runOne(kAdd, {f32({rows, 3}, a), f32({3}, b)});
    expectValues(r, {rows, 3}, expected, 1e-5);
    EXPECT_EQ(r.kind, DType::F32);
  }
}

TEST(Interpreter, RejectsBadArguments) {
  std::string count = runError(kAdd, {f32({2, 3}, ramp(6))});
  EXPECT_NE(count.find("takes 2 arguments, got 1"), std::string::npos) << count;
  std::string shape = runError(kAdd, {f32({2, 4}, ramp(8)), f32({3}, ramp(3))});
  EXPECT_NE(shape.find("argument #0"), std::string::npos) << shape;
  EXPECT_NE(shape.find("tensor<2x4xf32>"), std::string::npos) << shape;
  std::string kind =
      runError(kAdd, {f32({2, 3}, ramp(6)), i64({3}, {1, 2, 3})});
  EXPECT_NE(kind.find("argument #1"), std::string::npos) << kind;
  EXPECT_NE(kind.find("i64"), std::string::npos) << kind;
  std::string rank = runError(kAdd, {f32({6}, ramp(6)), f32({3}, ramp(3))});
  EXPECT_NE(rank.find("argument #0"), std::string::npos) << rank;
  std::string data = runError(kAdd, {f32({2, 3}, ramp(5)), f32({3}, ramp(3))});
  EXPECT_NE(data.find("holds 5 values"), std::string::npos) << data;
  std::string name = runError(R"(func.func @other() { return })", {});
  EXPECT_NE(name.find("no function @main"), std::string::npos) << name;
}

TEST(Interpreter, RuntimeBroadcastMismatchNamesOpAndShapes) {
  const char *text = R"(
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = loom.mul %a, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
)";
  std::string msg = runError(text, {f32({2, 3}, ramp(6)), f32({4}, ramp(4))});
  EXPECT_NE(msg.find("'loom.mul' at loc("), std::string::npos) << msg;
  EXPECT_NE(msg.find(":3:"), std::string::npos) << msg; // the op's line
  EXPECT_NE(msg.find("2x3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4"), std::string::npos) << msg;
}

TEST(Interpreter, UnknownOpIsAnError) {
  const char *text = R"(
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "mystery.op"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  std::string msg = runError(text, {f32({2}, {1, 2})});
  EXPECT_NE(msg.find("mystery.op"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not know"), std::string::npos) << msg;
}

TEST(Interpreter, RoundsToF32UnlessF64) {
  const char *text = R"(
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = loom.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  std::vector<HostTensor> args = {f32({2}, {1.0, 0.5}),
                                  f32({2}, {1e-10, 0.25})};
  HostTensor rounded = runOne(text, args);
  EXPECT_EQ(rounded.data[0], 1.0); // 1 + 1e-10 is 1 in f32
  EXPECT_EQ(rounded.data[1], 0.75);
  HostTensor exact = runOne(text, args, /*f64Mode=*/true);
  EXPECT_EQ(exact.data[0], 1.0 + 1e-10);
  // Every result is exactly representable as a float after rounding.
  HostTensor r = runOne(text, {f32({2}, {0.1, 1.0 / 3}), f32({2}, {0.2, 0.1})});
  for (double v : r.data)
    EXPECT_EQ(v, static_cast<double>(static_cast<float>(v)));
  EXPECT_EQ(r.data[0], static_cast<double>(static_cast<float>(0.1 + 0.2)));
}

TEST(Interpreter, RoundToKindForHalfFormats) {
  // bf16 keeps 7 fraction bits: ulp(1) = 2^-7; ties go to even.
  EXPECT_EQ(roundToKind(1.0 + std::ldexp(1, -8), DType::BF16), 1.0);
  EXPECT_EQ(roundToKind(1.0 + 3 * std::ldexp(1, -8), DType::BF16),
            1.0 + std::ldexp(1, -6));
  EXPECT_EQ(roundToKind(1.0 + std::ldexp(1, -8) + 1e-6, DType::BF16),
            1.0 + std::ldexp(1, -7));
  // 3e38 = 1.763... * 2^127 rounds to 226/128 * 2^127.
  EXPECT_EQ(roundToKind(3.0e38, DType::BF16), std::ldexp(226.0, 120));
  EXPECT_TRUE(std::isinf(roundToKind(3.5e38, DType::BF16)));
  // f16: 10 fraction bits, largest finite 65504, subnormal quantum 2^-24.
  EXPECT_EQ(roundToKind(1.0 + std::ldexp(1, -11), DType::F16), 1.0);
  EXPECT_EQ(roundToKind(65519.0, DType::F16), 65504.0);
  EXPECT_TRUE(std::isinf(roundToKind(65520.0, DType::F16)));
  EXPECT_EQ(roundToKind(std::ldexp(1, -25), DType::F16), 0.0);
  EXPECT_EQ(roundToKind(3 * std::ldexp(1, -26), DType::F16),
            std::ldexp(1, -24));
  EXPECT_EQ(roundToKind(-0.1, DType::F16), -0.0999755859375);
  EXPECT_EQ(roundToKind(0.1, DType::F32), double(0.1f));
  EXPECT_EQ(roundToKind(0.1, DType::F64), 0.1);
  EXPECT_EQ(roundToKind(7.0, DType::I32), 7.0);
}

TEST(Interpreter, RoundsBf16Results) {
  const char *text = R"(
func.func @main(%a: tensor<2xbf16>, %b: tensor<2xbf16>) -> tensor<2xbf16> {
  %0 = loom.mul %a, %b : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  return %0 : tensor<2xbf16>
}
)";
  HostTensor a({2}, DType::BF16, {1.0 + std::ldexp(1, -7), 3.0});
  HostTensor b({2}, DType::BF16, {1.0 + std::ldexp(1, -7), 1.0});
  HostTensor r = runOne(text, {a, b});
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 rounds to 1 + 2^-6.
  EXPECT_EQ(r.data[0], 1.0 + std::ldexp(1, -6));
  EXPECT_EQ(r.data[1], 3.0);
}

TEST(Interpreter, BinaryOpsBroadcast) {
  struct Case {
    const char *op;
    double (*fn)(double, double);
  };
  Case cases[] = {
      {"add", [](double x, double y) { return x + y; }},
      {"sub", [](double x, double y) { return x - y; }},
      {"mul", [](double x, double y) { return x * y; }},
      {"div", [](double x, double y) { return x / y; }},
      {"maximum", [](double x, double y) { return x > y ? x : y; }},
      {"minimum", [](double x, double y) { return x < y ? x : y; }},
      {"pow", [](double x, double y) { return std::pow(std::fabs(x), y); }},
  };
  // [2,1,3] against [4,1]: the result is [2,4,3].
  Values a = ramp(6), b = ramp(4, 3.0);
  for (const Case &c : cases) {
    std::string op = c.op;
    std::string text = "func.func @main(%a: tensor<2x1x3xf64>, %b: "
                       "tensor<4x1xf64>) -> tensor<2x4x3xf64> {\n  %0 = loom." +
                       op +
                       " %a, %b : (tensor<2x1x3xf64>, tensor<4x1xf64>) -> "
                       "tensor<2x4x3xf64>\n  return %0 : tensor<2x4x3xf64>\n}";
    Values lhs = a;
    if (op == "pow")
      for (double &v : lhs)
        v = std::fabs(v);
    Values expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k)
          expected.push_back(c.fn(a[i * 3 + k], b[j]));
    HostTensor r = runOne(text, {f64({2, 1, 3}, lhs), f64({4, 1}, b)});
    SCOPED_TRACE(op);
    expectValues(r, {2, 4, 3}, expected, 1e-12);
  }
}

TEST(Interpreter, ScalarBroadcastAndIntegerDivision) {
  const char *text = R"(
func.func @main(%a: tensor<4xi32>, %b: tensor<i32>) -> tensor<4xi32> {
  %0 = loom.div %a, %b : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
)";
  HostTensor r = runOne(text, {i32({4}, {7, -7, 6, 1}), i32({}, {2})});
  expectValues(r, {4}, {3, -3, 3, 0}); // truncates toward zero
  std::string msg = runError(text, {i32({4}, {7, -7, 6, 1}), i32({}, {0})});
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
}

TEST(Interpreter, UnaryOps) {
  struct Case {
    const char *op;
    double (*fn)(double);
  };
  Case cases[] = {
      {"neg", [](double x) { return -x; }},
      {"abs", [](double x) { return x < 0 ? -x : x; }},
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(std::fabs(x)); }},
      {"sqrt", [](double x) { return std::sqrt(std::fabs(x)); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(std::fabs(x)); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"gelu",
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
  };
  Values x = ramp(6, 7.0);
  for (const Case &c : cases) {
    std::string op = c.op;
    bool positive = op == "log" || op == "sqrt" || op == "rsqrt";
    Values in = x;
    if (positive)
      for (double &v : in)
        v = std::fabs(v);
    Values expected;
    for (double v : in)
      expected.push_back(c.fn(v));
    std::string text = "func.func @main(%x: tensor<2x3xf64>) -> "
                       "tensor<2x3xf64> {\n  %0 = loom." +
                       op +
                       " %x : (tensor<2x3xf64>) -> tensor<2x3xf64>\n"
                       "  return %0 : tensor<2x3xf64>\n}";
    SCOPED_TRACE(op);
    expectValues(runOne(text, {f64({2, 3}, in)}), {2, 3}, expected, 1e-14);
  }
  // A sigmoid of a large negative input neither overflows nor gives NaN.
  const char *sig = R"(
func.func @main(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = loom.sigmoid %x : (tensor<2xf64>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
}
)";
  HostTensor r = runOne(sig, {f64({2}, {-800, 800})});
  EXPECT_EQ(r.data[0], 0.0);
  EXPECT_EQ(r.data[1], 1.0);
}

TEST(Interpreter, CompareAndSelectBroadcast) {
  const char *text = R"(
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<f32>) -> (tensor<2x3xi1>, tensor<2x3xf32>) {
  %m = loom.compare gt, %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %s = loom.select %m, %a, %c : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %m, %s : tensor<2x3xi1>, tensor<2x3xf32>
}
)";
  Values a = {1, 5, -2, 4, 0, 3}, b = {2, 2, 2};
  auto results = interpret(text, {f32({2, 3}, a), f32({3}, b), f32({}, {-9})});
  ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
  Values mask, sel;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      bool gt = a[i * 3 + j] > b[j];
      mask.push_back(gt);
      sel.push_back(gt ? a[i * 3 + j] : -9);
    }
  EXPECT_EQ((*results)[0].kind, DType::I1);
  expectValues((*results)[0], {2, 3}, mask);
  expectValues((*results)[1], {2, 3}, sel);

  const char *preds = R"(
func.func @main(%a: tensor<3xi64>, %b: tensor<3xi64>) -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %0 = loom.compare eq, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %1 = loom.compare ne, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %2 = loom.compare lt, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %3 = loom.compare le, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %4 = loom.compare ge, %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  return %0, %1, %2, %3, %4 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}
)";
  auto p = interpret(preds, {i64({3}, {1, 2, 3}), i64({3}, {2, 2, 2})});
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  expectValues((*p)[0], {3}, {0, 1, 0});
  expectValues((*p)[1], {3}, {1, 0, 1});
  expectValues((*p)[2], {3}, {1, 0, 0});
  expectValues((*p)[3], {3}, {1, 1, 0});
  expectValues((*p)[4], {3}, {0, 1, 1});
}

TEST(Interpreter, Cast) {
  const char *text = R"(
func.func @main(%x: tensor<5xf32>, %n: tensor<2xi64>) -> (tensor<5xi32>, tensor<5xi1>, tensor<2xf32>) {
  %0 = loom.cast %x : tensor<5xf32> to tensor<5xi32>
  %1 = loom.cast %x : tensor<5xf32> to tensor<5xi1>
  %2 = loom.cast %n : tensor<2xi64> to tensor<2xf32>
  return %0, %1, %2 : tensor<5xi32>, tensor<5xi1>, tensor<2xf32>
}
)";
  auto r = interpret(text, {f32({5}, {2.75, -2.75, 0.0, 0.5, -1.0}),
                            i64({2}, {16777217, -3})});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {5}, {2, -2, 0, 0, -1});
  expectValues((*r)[1], {5}, {1, 1, 0, 1, 1});
  // 2^24 + 1 is not a float: the cast's result is rounded to f32.
  expectValues((*r)[2], {2}, {16777216, -3});
}

TEST(Interpreter, Constants) {
  const char *text = R"(
func.func @main() -> (tensor<2x2xf32>, tensor<3xf32>, tensor<2xi32>, tensor<3xi1>, tensor<2xf16>) {
  %0 = loom.constant dense<[[1.5, -2.0], [0.25, 4.0]]> : tensor<2x2xf32>
  %1 = loom.constant dense<7.0> : tensor<3xf32>
  %2 = loom.constant dense<[3, -4]> : tensor<2xi32>
  %3 = loom.constant dense<[true, false, true]> : tensor<3xi1>
  %4 = loom.constant dense<[0.5, -3.0]> : tensor<2xf16>
  return %0, %1, %2, %3, %4 : tensor<2x2xf32>, tensor<3xf32>, tensor<2xi32>, tensor<3xi1>, tensor<2xf16>
}
)";
  auto r = interpret(text, {});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 2}, {1.5, -2.0, 0.25, 4.0});
  expectValues((*r)[1], {3}, {7, 7, 7});
  expectValues((*r)[2], {2}, {3, -4});
  expectValues((*r)[3], {3}, {1, 0, 1});
  expectValues((*r)[4], {2}, {0.5, -3.0});
  EXPECT_EQ((*r)[4].kind, DType::F16);
}

TEST(Interpreter, Iota) {
  const char *text = R"(
func.func @main(%x: tensor<2x?xf32>) -> tensor<?xi64> {
  %0 = loom.iota %x {dim = 1 : i64} : tensor<2x?xf32> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}
)";
  expectValues(runOne(text, {f32({2, 4}, ramp(8))}), {4}, {0, 1, 2, 3});
}

TEST(Interpreter, CallsOtherFunctions) {
  const char *text = R"(
func.func @square(%x: tensor<?xf64>) -> tensor<?xf64> {
  %0 = loom.mul %x, %x : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
  return %0 : tensor<?xf64>
}
func.func @main(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %0 = func.call @square(%x) : (tensor<?xf64>) -> tensor<?xf64>
  return %0, %x : tensor<?xf64>, tensor<?xf64>
}
)";
  auto r = interpret(text, {f64({3}, {1, -2, 3})});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {3}, {1, 4, 9});
  expectValues((*r)[1], {3}, {1, -2, 3}); // an argument returned as is
}

TEST(Interpreter, ValueUsedAfterManyOpsStaysAlive) {
  // %x is read first and last; values in between die early. The result must
  // not depend on when they are freed.
  const char *text = R"(
func.func @main(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %0 = loom.exp %x : (tensor<4xf64>) -> tensor<4xf64>
  %1 = loom.log %0 : (tensor<4xf64>) -> tensor<4xf64>
  %2 = loom.neg %1 : (tensor<4xf64>) -> tensor<4xf64>
  %unused = loom.abs %2 : (tensor<4xf64>) -> tensor<4xf64>
  %3 = loom.add %2, %x : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %3, %3 : tensor<4xf64>, tensor<4xf64>
}
)";
  auto r = interpret(text, {f64({4}, ramp(4))});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {4}, {0, 0, 0, 0}, 1e-15);
  expectValues((*r)[1], {4}, {0, 0, 0, 0}, 1e-15);
}

} // namespace
