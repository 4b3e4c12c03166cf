//===- InterpreterNNTest.cpp - The interpreter: matmul, reductions, NN ops ===//
//
// Expected values come from naive loops written here, from the ops'
// definitions, or (for cross_entropy_grad) from finite differences.
//
//===----------------------------------------------------------------------===//

#include "InterpreterTestUtil.h"

#include "abi/CounterRng.h"

#include "mlir/IR/MLIRContext.h"

using namespace loom;
using namespace loom::test;

namespace {

/// out[b..., m, n] = sum_k A[b..., m, k] B[b..., k, n] where A and B are
/// read through the transpose flags and batch dims of size 1 broadcast.
Values naiveMatmul(const Values &a, std::vector<int64_t> as, const Values &b,
                   std::vector<int64_t> bs, bool ta, bool tb,
                   std::vector<int64_t> batch, int64_t m, int64_t k,
                   int64_t n) {
  // Left-pad batch dims with 1s.
  while (as.size() - 2 < batch.size())
    as.insert(as.begin(), 1);
  while (bs.size() - 2 < batch.size())
    bs.insert(bs.begin(), 1);
  int64_t batches = 1;
  for (int64_t d : batch)
    batches *= d;
  Values out;
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Decompose bi into a batch index; find each operand's matrix.
    int64_t rest = bi, aMat = 0, bMat = 0, aScale = 1, bScale = 1;
    for (int64_t d = batch.size() - 1; d >= 0; --d) {
      int64_t i = rest % batch[d];
      rest /= batch[d];
      aMat += (as[d] == 1 ? 0 : i) * aScale;
      bMat += (bs[d] == 1 ? 0 : i) * bScale;
      aScale *= as[d];
      bScale *= bs[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x =
              ta ? a[aMat * m * k + p * m + i] : a[aMat * m * k + i * k + p];
          double y =
              tb ? b[bMat * k * n + j * k + p] : b[bMat * k * n + p * n + j];
          sum += x * y;
        }
        out.push_back(sum);
      }
  }
  return out;
}

std::string shapeText(const std::vector<int64_t> &shape, const char *el) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + el + ">";
}

TEST(InterpreterNN, Matmul) {
  struct Case {
    std::vector<int64_t> as, bs;
    bool ta, tb;
    std::vector<int64_t> batch;
    int64_t m, k, n;
  };
  Case cases[] = {
      {{2, 3}, {3, 4}, false, false, {}, 2, 3, 4},
      {{3, 2}, {3, 4}, true, false, {}, 2, 3, 4},
      {{2, 3}, {4, 3}, false, true, {}, 2, 3, 4},
      {{3, 2}, {4, 3}, true, true, {}, 2, 3, 4},
      {{2, 2, 3}, {4, 3}, false, true, {2}, 2, 3, 4},  // x . W^T
      {{2, 3}, {5, 3, 4}, false, false, {5}, 2, 3, 4}, // rank-2 lhs
      {{2, 1, 2, 3}, {3, 3, 4}, false, false, {2, 3}, 2, 3, 4},
      {{2, 3, 3, 2}, {1, 3, 4, 3}, true, true, {2, 3}, 2, 3, 4},
  };
  for (const Case &c : cases) {
    int64_t na = 1, nb = 1;
    for (int64_t d : c.as)
      na *= d;
    for (int64_t d : c.bs)
      nb *= d;
    Values a = ramp(na), b = ramp(nb, 0.7);
    std::vector<int64_t> out = c.batch;
    out.push_back(c.m);
    out.push_back(c.n);
    std::string attrs;
    if (c.ta || c.tb)
      attrs = std::string(" {") + (c.ta ? "transpose_lhs" : "") +
              (c.ta && c.tb ? ", " : "") + (c.tb ? "transpose_rhs" : "") + "}";
    std::string ta = shapeText(c.as, "f64"), tb = shapeText(c.bs, "f64"),
                to = shapeText(out, "f64");
    std::string text = "func.func @main(%a: " + ta + ", %b: " + tb + ") -> " +
                       to + " {\n  %0 = loom.matmul %a, %b" + attrs + " : (" +
                       ta + ", " + tb + ") -> " + to + "\n  return %0 : " + to +
                       "\n}";
    SCOPED_TRACE(text);
    HostTensor r = runOne(text, {f64(c.as, a), f64(c.bs, b)});
    expectValues(
        r, out,
        naiveMatmul(a, c.as, b, c.bs, c.ta, c.tb, c.batch, c.m, c.k, c.n),
        1e-12);
  }
}

TEST(InterpreterNN, MatmulDynamicContractionMismatch) {
  const char *text = R"(
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = loom.matmul %a, %b : (tensor<?x?xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
)";
  std::string msg =
      runError(text, {f32({2, 3}, ramp(6)), f32({5, 4}, ramp(20))});
  EXPECT_NE(msg.find("'loom.matmul'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2x3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5x4"), std::string::npos) << msg;
}

TEST(InterpreterNN, Reductions) {
  const char *text = R"(
func.func @main(%x: tensor<2x3x4xf64>) -> (tensor<2x4xf64>, tensor<1x3x1xf64>, tensor<2x3xf64>, tensor<4xf64>) {
  %0 = loom.reduce_sum %x [1] : (tensor<2x3x4xf64>) -> tensor<2x4xf64>
  %1 = loom.reduce_sum %x [0, 2] keep_dims : (tensor<2x3x4xf64>) -> tensor<1x3x1xf64>
  %2 = loom.reduce_mean %x [2] : (tensor<2x3x4xf64>) -> tensor<2x3xf64>
  %3 = loom.reduce_max %x [0, 1] : (tensor<2x3x4xf64>) -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<2x4xf64>, tensor<1x3x1xf64>, tensor<2x3xf64>, tensor<4xf64>
}
)";
  Values x = ramp(24);
  auto at = [&](int i, int j, int k) { return x[i * 12 + j * 4 + k]; };
  Values sum1(8, 0), sum02(3, 0), mean2(6, 0), max01(4, -1e300);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        sum1[i * 4 + k] += at(i, j, k);
        sum02[j] += at(i, j, k);
        mean2[i * 3 + j] += at(i, j, k) / 4;
        max01[k] = std::max(max01[k], at(i, j, k));
      }
  auto r = interpret(text, {f64({2, 3, 4}, x)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 4}, sum1);
  expectValues((*r)[1], {1, 3, 1}, sum02);
  expectValues((*r)[2], {2, 3}, mean2);
  expectValues((*r)[3], {4}, max01);
}

TEST(InterpreterNN, SoftmaxAndLogSoftmax) {
  const char *text = R"(
func.func @main(%x: tensor<2x3x2xf64>) -> (tensor<2x3x2xf64>, tensor<2x3x2xf64>) {
  %0 = loom.softmax %x {axis = 1 : i64} : (tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %1 = loom.log_softmax %x {axis = 0 : i64} : (tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  return %0, %1 : tensor<2x3x2xf64>, tensor<2x3x2xf64>
}
)";
  Values x = ramp(12, 10.0);
  auto at = [&](int i, int j, int k) { return x[i * 6 + j * 2 + k]; };
  Values soft(12), logSoft(12);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        double s1 = 0, s0 = 0;
        for (int jj = 0; jj < 3; ++jj)
          s1 += std::exp(at(i, jj, k));
        for (int ii = 0; ii < 2; ++ii)
          s0 += std::exp(at(ii, j, k));
        soft[i * 6 + j * 2 + k] = std::exp(at(i, j, k)) / s1;
        logSoft[i * 6 + j * 2 + k] = at(i, j, k) - std::log(s0);
      }
  auto r = interpret(text, {f64({2, 3, 2}, x)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 3, 2}, soft, 1e-14);
  expectValues((*r)[1], {2, 3, 2}, logSoft, 1e-13);
}

TEST(InterpreterNN, SoftmaxIsStableForLargeInputs) {
  const char *text = R"(
func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = loom.softmax %x {axis = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  %1 = loom.log_softmax %x {axis = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
)";
  auto r = interpret(text, {f32({3}, {1000, 1001, 1002})});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  // Shift invariance: the same as softmax of [0, 1, 2].
  double s = 1 + std::exp(1.0) + std::exp(2.0);
  expectValues((*r)[0], {3}, {1 / s, std::exp(1.0) / s, std::exp(2.0) / s},
               1e-6);
  expectValues((*r)[1], {3}, {-std::log(s), 1 - std::log(s), 2 - std::log(s)},
               1e-5);
}

TEST(InterpreterNN, LayerNorm) {
  const char *text = R"(
func.func @main(%x: tensor<?x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<?x4xf64> {
  %0 = loom.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<?x4xf64>
  return %0 : tensor<?x4xf64>
}
)";
  Values x = ramp(12, 3.0), g = {1, 2, 0.5, -1}, b = {0, 0.1, -0.2, 0.3};
  Values expected;
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 4; ++i)
      mean += x[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i)
      var += (x[r * 4 + i] - mean) * (x[r * 4 + i] - mean) / 4; // biased
    for (int i = 0; i < 4; ++i)
      expected.push_back((x[r * 4 + i] - mean) / std::sqrt(var + 1e-5) * g[i] +
                         b[i]);
  }
  expectValues(runOne(text, {f64({3, 4}, x), f64({4}, g), f64({4}, b)}), {3, 4},
               expected, 1e-12);
}

std::string dropoutText(double rate, int64_t offset) {
  return "func.func @main(%x: tensor<?xf64>, %s: tensor<i64>) -> "
         "tensor<?xf64> {\n  %0 = loom.dropout %x, %s {offset = " +
         std::to_string(offset) + " : i64, rate = " + std::to_string(rate) +
         " : f64} : (tensor<?xf64>, tensor<i64>) -> tensor<?xf64>\n"
         "  return %0 : tensor<?xf64>\n}";
}

TEST(InterpreterNN, DropoutRateZeroIsIdentity) {
  Values x = ramp(100);
  expectValues(runOne(dropoutText(0.0, 3), {f64({100}, x), i64({}, {42})}),
               {100}, x, 0);
}

TEST(InterpreterNN, DropoutKeepsAboutHalfAndReplays) {
  const int64_t n = 10000;
  Values ones(n, 1.0);
  auto mask = [&](int64_t seed, int64_t offset) {
    HostTensor r = runOne(dropoutText(0.5, offset),
                          {f64({n}, ones), i64({}, {double(seed)})});
    std::vector<bool> kept;
    for (double v : r.data) {
      EXPECT_TRUE(v == 0.0 || v == 2.0) << v; // kept values scaled by 1/(1-p)
      kept.push_back(v != 0.0);
    }
    return kept;
  };
  std::vector<bool> a = mask(7, 1), again = mask(7, 1), other = mask(7, 2),
                    otherSeed = mask(8, 1);
  int64_t keptCount = std::count(a.begin(), a.end(), true);
  EXPECT_GT(keptCount, 4700);
  EXPECT_LT(keptCount, 5300);
  EXPECT_EQ(a, again);
  EXPECT_NE(a, other);
  EXPECT_NE(a, otherSeed);
  // The mask is the counter-based stream's, element by row-major index.
  uint64_t key = dropoutKey(7, 1);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(a[i], dropoutKeep(key, i, 0.5)) << i;
}

TEST(InterpreterNN, CausalAndPaddingMasks) {
  const char *text = R"(
func.func @main(%x: tensor<2x?x8xf32>, %ids: tensor<2x3xi64>) -> (tensor<?x?xf32>, tensor<2x1x1x3xf32>) {
  %0 = loom.causal_mask %x {dim = 1 : i64} : tensor<2x?x8xf32> -> tensor<?x?xf32>
  %1 = loom.padding_mask %ids {pad = 0 : i64} : tensor<2x3xi64> -> tensor<2x1x1x3xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<2x1x1x3xf32>
}
)";
  Values ids = {5, 0, 3, 0, 0, 9};
  auto r = interpret(text, {f32({2, 3, 8}, ramp(48)), i64({2, 3}, ids)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  double masked = static_cast<float>(-1e9);
  Values causal;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      causal.push_back(j <= i ? 0.0 : masked);
  expectValues((*r)[0], {3, 3}, causal, 0);
  Values pad;
  for (double id : ids)
    pad.push_back(id == 0 ? masked : 0.0);
  expectValues((*r)[1], {2, 1, 1, 3}, pad, 0);

  // f16 cannot hold -1e9; the mask stays finite (the lowest f16) instead of
  // becoming -inf, so a fully masked row still has no NaNs.
  const char *half = R"(
func.func @main(%x: tensor<2xf16>) -> tensor<2x2xf16> {
  %0 = loom.causal_mask %x {dim = 0 : i64} : tensor<2xf16> -> tensor<2x2xf16>
  return %0 : tensor<2x2xf16>
}
)";
  HostTensor x({2}, DType::F16, {0, 0});
  expectValues(runOne(half, {x}), {2, 2}, {0, -65504, 0, 0}, 0);
}

const char *kCrossEntropy = R"(
func.func @loss(%l: tensor<2x3x4xf64>, %t: tensor<2x3xi64>) -> tensor<2x3xf64> {
  %0 = loom.cross_entropy %l, %t {label_smoothing = 0.1 : f64, ignore_index = -100 : i64} : (tensor<2x3x4xf64>, tensor<2x3xi64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
func.func @grad(%l: tensor<2x3x4xf64>, %t: tensor<2x3xi64>, %g: tensor<2x3xf64>) -> tensor<2x3x4xf64> {
  %0 = loom.cross_entropy_grad %l, %t, %g {label_smoothing = 0.1 : f64, ignore_index = -100 : i64} : (tensor<2x3x4xf64>, tensor<2x3xi64>, tensor<2x3xf64>) -> tensor<2x3x4xf64>
  return %0 : tensor<2x3x4xf64>
}
)";

TEST(InterpreterNN, CrossEntropyWithSmoothingAndIgnore) {
  Values l = ramp(24, 4.0), t = {0, 3, -100, 2, 1, 1};
  Values expected;
  for (int r = 0; r < 6; ++r) {
    if (t[r] == -100) {
      expected.push_back(0);
      continue;
    }
    double z = 0;
    for (int c = 0; c < 4; ++c)
      z += std::exp(l[r * 4 + c]);
    double loss = 0;
    for (int c = 0; c < 4; ++c) {
      double q = 0.1 / 4 + (c == t[r] ? 0.9 : 0.0);
      loss -= q * std::log(std::exp(l[r * 4 + c]) / z);
    }
    expected.push_back(loss);
  }
  auto r = interpret(kCrossEntropy, {f64({2, 3, 4}, l), i64({2, 3}, t)},
                     /*f64Mode=*/true, "loss");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  expectValues((*r)[0], {2, 3}, expected, 1e-12);
}

TEST(InterpreterNN, CrossEntropyRejectsOutOfRangeTarget) {
  Values t = {0, 4, 1, 2, 1, 1};
  auto r = interpret(kCrossEntropy, {f64({2, 3, 4}, ramp(24)), i64({2, 3}, t)},
                     false, "loss");
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("'loom.cross_entropy'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("id 4"), std::string::npos) << msg;
}

TEST(InterpreterNN, CrossEntropyGradMatchesFiniteDifferences) {
  auto ctx = makeContext();
  auto module = parse(*ctx, kCrossEntropy);
  ASSERT_TRUE(module);
  InterpreterOptions options;
  options.f64 = true;
  Interpreter interp(*module, options);
  Values l = ramp(24, 4.0), t = {0, 3, -100, 2, 1, 1},
         g = {1.0, -0.5, 2.0, 0.25, 3.0, 1.5};
  HostTensor targets = i64({2, 3}, t);
  // f(l) = sum_r g[r] * loss[r](l); its gradient is what the op computes.
  auto f = [&](const Values &logits) {
    auto r = interp.run("loss", {f64({2, 3, 4}, logits), targets});
    EXPECT_TRUE(bool(r));
    double sum = 0;
    for (int i = 0; i < 6; ++i)
      sum += g[i] * (*r)[0].data[i];
    return sum;
  };
  auto r = interp.run("grad", {f64({2, 3, 4}, l), targets, f64({2, 3}, g)});
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  const HostTensor &grad = (*r)[0];
  ASSERT_EQ(grad.shape, (std::vector<int64_t>{2, 3, 4}));
  const double h = 1e-6;
  for (int i = 0; i < 24; ++i) {
    Values lp = l, lm = l;
    lp[i] += h;
    lm[i] -= h;
    double fd = (f(lp) - f(lm)) / (2 * h);
    EXPECT_NEAR(grad.data[i], fd, 1e-7) << "at " << i;
  }
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(grad.data[2 * 4 + c], 0.0); // the ignored row
}

} // namespace
