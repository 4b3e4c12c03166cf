//===- GradientCheckTest.cpp - Every gradient rule against differences ----===//
//
// One check per differentiable op (and per variant that takes a different
// path through its rule): the gradients loom-autodiff builds must match
// central differences of the loss to a relative error below 1e-6. Inputs stay
// away from kinks (relu, abs, maximum and minimum at ties) where differences
// are not a derivative.
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"

using namespace loom;
using loom::test::GradientCheck;

//===----------------------------------------------------------------------===//
// Binary elementwise ops, each with a broadcast operand
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Add) {
  GradientCheck(1)
      .uniform("a", {2, 3})
      .uniform("b", {3})
      .op("%y = loom.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, SubBroadcastsBothSides) {
  GradientCheck(2)
      .uniform("a", {2, 1})
      .uniform("b", {3})
      .op("%y = loom.sub %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, MulByScalar) {
  GradientCheck(3)
      .uniform("a", {2, 3})
      .uniform("b", {})
      .op("%y = loom.mul %a, %b : (tensor<2x3xf32>, tensor<f32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, Div) {
  GradientCheck(4)
      .uniform("a", {2, 3})
      .awayFromZero("b", {2, 1}, 0.5, 2.0)
      .op("%y = loom.div %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

// Pairs at least 0.1 apart, so no difference step crosses a tie.
static const std::vector<double> kLhs = {0.3, -0.8, 1.1, -0.5, 0.9, 0.2};
static const std::vector<double> kRhs = {0.1, -0.2, 0.6};

TEST(GradientCheck, Maximum) {
  GradientCheck(5)
      .values("a", {2, 3}, kLhs)
      .values("b", {3}, kRhs)
      .op("%y = loom.maximum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, Minimum) {
  GradientCheck(6)
      .values("a", {2, 3}, kLhs)
      .values("b", {3}, kRhs)
      .op("%y = loom.minimum %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, Pow) {
  GradientCheck(7)
      .uniform("x", {2, 3}, 0.5, 2.0)
      .uniform("e", {3}, -1.5, 1.5)
      .op("%y = loom.pow %x, %e : (tensor<2x3xf32>, tensor<3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

/// `%y = loom.<name> %x` on a [2, 3] input drawn from [lo, hi], or from
/// +-[lo, hi] with `awayFromZero`.
static void checkUnary(unsigned seed, const std::string &name, double lo,
                       double hi, bool awayFromZero = false) {
  GradientCheck check(seed);
  if (awayFromZero)
    check.awayFromZero("x", {2, 3}, lo, hi);
  else
    check.uniform("x", {2, 3}, lo, hi);
  check.op("%y = loom." + name + " %x : (tensor<2x3xf32>) -> tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, Neg) { checkUnary(10, "neg", -1, 1); }
TEST(GradientCheck, Abs) { checkUnary(11, "abs", 0.1, 1, true); }
TEST(GradientCheck, Exp) { checkUnary(12, "exp", -1, 1); }
TEST(GradientCheck, Log) { checkUnary(13, "log", 0.2, 2); }
TEST(GradientCheck, Sqrt) { checkUnary(14, "sqrt", 0.2, 2); }
TEST(GradientCheck, Rsqrt) { checkUnary(15, "rsqrt", 0.2, 2); }
TEST(GradientCheck, Tanh) { checkUnary(16, "tanh", -2, 2); }
TEST(GradientCheck, Sigmoid) { checkUnary(17, "sigmoid", -3, 3); }
TEST(GradientCheck, Relu) { checkUnary(18, "relu", 0.1, 1, true); }
TEST(GradientCheck, Gelu) { checkUnary(19, "gelu", -3, 3); }
TEST(GradientCheck, Erf) { checkUnary(20, "erf", -2, 2); }
TEST(GradientCheck, Sin) { checkUnary(21, "sin", -3, 3); }
TEST(GradientCheck, Cos) { checkUnary(22, "cos", -3, 3); }

//===----------------------------------------------------------------------===//
// Select and cast
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Select) {
  GradientCheck(30)
      .values("c", {2, 3}, {1, 0, 0, 1, 1, 0}, DType::I1)
      .uniform("a", {2, 3})
      .uniform("b", {3})
      .op("%y = loom.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, "
          "tensor<3xf32>) -> tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, CastToF64) {
  GradientCheck(31)
      .uniform("x", {2, 3})
      .op("%y = loom.cast %x : tensor<2x3xf32> to tensor<2x3xf64>")
      .check({2, 3}, "f64");
}

TEST(GradientCheck, CastFromF64) {
  GradientCheck(32)
      .uniform("x", {2, 3}, -1, 1, DType::F64)
      .op("%y = loom.cast %x : tensor<2x3xf64> to tensor<2x3xf32>")
      .check({2, 3});
}

//===----------------------------------------------------------------------===//
// Matmul: every transpose combination and broadcast batch dims
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Matmul) {
  GradientCheck(40)
      .uniform("a", {2, 3})
      .uniform("b", {3, 4})
      .op("%y = loom.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> "
          "tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, MatmulTransposeLhs) {
  GradientCheck(41)
      .uniform("a", {3, 2})
      .uniform("b", {3, 4})
      .op("%y = loom.matmul %a, %b {transpose_lhs} : (tensor<3x2xf32>, "
          "tensor<3x4xf32>) -> tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, MatmulTransposeRhs) {
  GradientCheck(42)
      .uniform("a", {2, 3})
      .uniform("b", {4, 3})
      .op("%y = loom.matmul %a, %b {transpose_rhs} : (tensor<2x3xf32>, "
          "tensor<4x3xf32>) -> tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, MatmulTransposeBoth) {
  GradientCheck(43)
      .uniform("a", {3, 2})
      .uniform("b", {4, 3})
      .op("%y = loom.matmul %a, %b {transpose_lhs, transpose_rhs} : "
          "(tensor<3x2xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, MatmulBroadcastBatch) {
  // Both operands broadcast: lhs over the 3 of rhs, rhs over the 2 of lhs.
  GradientCheck(44)
      .uniform("a", {2, 1, 2, 3})
      .uniform("b", {3, 3, 4})
      .op("%y = loom.matmul %a, %b : (tensor<2x1x2x3xf32>, tensor<3x3x4xf32>) "
          "-> tensor<2x3x2x4xf32>")
      .check({2, 3, 2, 4});
}

TEST(GradientCheck, MatmulBatchedTransposedAgainstMatrix) {
  GradientCheck(45)
      .uniform("a", {2, 3, 2})
      .uniform("b", {4, 3})
      .op("%y = loom.matmul %a, %b {transpose_lhs, transpose_rhs} : "
          "(tensor<2x3x2xf32>, tensor<4x3xf32>) -> tensor<2x2x4xf32>")
      .check({2, 2, 4});
}

//===----------------------------------------------------------------------===//
// Reductions, with and without keep_dims
//===----------------------------------------------------------------------===//

TEST(GradientCheck, ReduceSum) {
  GradientCheck(50)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_sum %x [1] : (tensor<2x3x4xf32>) -> "
          "tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, ReduceSumKeepDims) {
  GradientCheck(51)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_sum %x [2, 0] keep_dims : (tensor<2x3x4xf32>) -> "
          "tensor<1x3x1xf32>")
      .check({1, 3, 1});
}

TEST(GradientCheck, ReduceMean) {
  GradientCheck(52)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_mean %x [0, 2] : (tensor<2x3x4xf32>) -> "
          "tensor<3xf32>")
      .check({3});
}

TEST(GradientCheck, ReduceMeanKeepDims) {
  GradientCheck(53)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_mean %x [1] keep_dims : (tensor<2x3x4xf32>) -> "
          "tensor<2x1x4xf32>")
      .check({2, 1, 4});
}

TEST(GradientCheck, ReduceMeanOverDynamicDim) {
  // The divisor is only known at run time.
  GradientCheck(54)
      .values("x", {4, 3},
              {0.1, -0.4, 0.7, 1.2, -0.9, 0.3, 0.5, 0.8, -0.2, -1.1, 0.6, 0.4},
              DType::F32, {-1, 3})
      .op("%y = loom.reduce_mean %x [0] : (tensor<?x3xf32>) -> tensor<3xf32>")
      .check({3});
}

TEST(GradientCheck, ReduceMax) {
  GradientCheck(55)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_max %x [1] : (tensor<2x3x4xf32>) -> "
          "tensor<2x4xf32>")
      .check({2, 4});
}

TEST(GradientCheck, ReduceMaxKeepDims) {
  GradientCheck(56)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reduce_max %x [0, 2] keep_dims : (tensor<2x3x4xf32>) -> "
          "tensor<1x3x1xf32>")
      .check({1, 3, 1});
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Softmax) {
  GradientCheck(60)
      .uniform("x", {2, 3, 4}, -2, 2)
      .op("%y = loom.softmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> "
          "tensor<2x3x4xf32>")
      .check({2, 3, 4});
}

TEST(GradientCheck, LogSoftmax) {
  GradientCheck(61)
      .uniform("x", {2, 5}, -2, 2)
      .op("%y = loom.log_softmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> "
          "tensor<2x5xf32>")
      .check({2, 5});
}

TEST(GradientCheck, LayerNorm) {
  GradientCheck(62)
      .uniform("x", {2, 3, 4}, -2, 2)
      .uniform("gamma", {4}, 0.5, 1.5)
      .uniform("beta", {4})
      .op("%y = loom.layer_norm %x, %gamma, %beta {epsilon = 1.0e-05 : f64} : "
          "(tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> "
          "tensor<2x3x4xf32>")
      .check({2, 3, 4});
}

TEST(GradientCheck, Dropout) {
  // The mask is a function of the seed, so it is the same in every
  // evaluation and the loss is smooth in x.
  GradientCheck(63)
      .uniform("x", {4, 5})
      .values("seed", {}, {42}, DType::I64)
      .op("%y = loom.dropout %x, %seed {rate = 3.0e-01 : f64, offset = 7 : "
          "i64} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x5xf32>")
      .check({4, 5});
}

TEST(GradientCheck, CrossEntropyWithSmoothingAndIgnoredTarget) {
  GradientCheck(64)
      .uniform("logits", {4, 5}, -2, 2)
      .values("targets", {4}, {1, -100, 4, 0}, DType::I64)
      .op("%y = loom.cross_entropy %logits, %targets {label_smoothing = "
          "1.0e-01 : f64, ignore_index = -100 : i64} : (tensor<4x5xf32>, "
          "tensor<4xi64>) -> tensor<4xf32>")
      .check({4});
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

TEST(GradientCheck, Reshape) {
  GradientCheck(70)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.reshape %x [6, -1] : (tensor<2x3x4xf32>) -> "
          "tensor<6x4xf32>")
      .check({6, 4});
}

TEST(GradientCheck, ReshapeAs) {
  // `like` only lends its shape: its gradient is zero.
  GradientCheck(71)
      .uniform("x", {2, 6})
      .uniform("like", {3, 4})
      .op("%y = loom.reshape_as %x, %like : (tensor<2x6xf32>, "
          "tensor<3x4xf32>) -> tensor<3x4xf32>")
      .check({3, 4});
}

TEST(GradientCheck, ExpandDims) {
  GradientCheck(72)
      .uniform("x", {2, 3})
      .op("%y = loom.expand_dims %x [0, 2] : (tensor<2x3xf32>) -> "
          "tensor<1x2x1x3xf32>")
      .check({1, 2, 1, 3});
}

TEST(GradientCheck, Transpose) {
  GradientCheck(73)
      .uniform("x", {2, 3, 4})
      .op("%y = loom.transpose %x [2, 0, 1] : (tensor<2x3x4xf32>) -> "
          "tensor<4x2x3xf32>")
      .check({4, 2, 3});
}

TEST(GradientCheck, Slice) {
  GradientCheck(74)
      .uniform("x", {3, 5})
      .op("%y = loom.slice %x {dim = 1 : i64, start = 1 : i64, end = -1 : "
          "i64} : (tensor<3x5xf32>) -> tensor<3x3xf32>")
      .check({3, 3});
}

TEST(GradientCheck, SliceFromTheEnd) {
  GradientCheck(75)
      .uniform("x", {4, 3})
      .op("%y = loom.slice %x {dim = 0 : i64, start = -2 : i64, end = 0 : "
          "i64} : (tensor<4x3xf32>) -> tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, SliceGrad) {
  GradientCheck(76)
      .uniform("x", {3, 2})
      .uniform("like", {3, 5})
      .op("%y = loom.slice_grad %x, %like {dim = 1 : i64, start = 2 : i64, "
          "end = 4 : i64} : (tensor<3x2xf32>, tensor<3x5xf32>) -> "
          "tensor<3x5xf32>")
      .check({3, 5});
}

TEST(GradientCheck, ConcatThreeInputs) {
  GradientCheck(77)
      .uniform("a", {2, 1})
      .uniform("b", {2, 3})
      .uniform("c", {2, 2})
      .op("%y = loom.concat %a, %b, %c {dim = 1 : i64} : (tensor<2x1xf32>, "
          "tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>")
      .check({2, 6});
}

TEST(GradientCheck, ConcatWithDynamicSize) {
  // The first input's extent is dynamic: its slice ends where the static
  // size of the inputs after it begins, counted from the end.
  GradientCheck(78)
      .values("a", {3, 2}, {0.5, -0.3, 0.8, 0.1, -0.7, 0.4}, DType::F32,
              {-1, 2})
      .uniform("b", {2, 2})
      .op("%y = loom.concat %a, %b {dim = 0 : i64} : (tensor<?x2xf32>, "
          "tensor<2x2xf32>) -> tensor<?x2xf32>")
      .check({5, 2}, "f32", "tensor<?x2xf32>");
}

TEST(GradientCheck, BroadcastAs) {
  GradientCheck(79)
      .uniform("x", {3, 1})
      .uniform("like", {2, 3, 4})
      .op("%y = loom.broadcast_as %x, %like : (tensor<3x1xf32>, "
          "tensor<2x3x4xf32>) -> tensor<2x3x4xf32>")
      .check({2, 3, 4});
}

TEST(GradientCheck, SumTo) {
  GradientCheck(80)
      .uniform("x", {2, 3, 4})
      .uniform("like", {3, 1})
      .op("%y = loom.sum_to %x, %like : (tensor<2x3x4xf32>, tensor<3x1xf32>) "
          "-> tensor<3x1xf32>")
      .check({3, 1});
}

TEST(GradientCheck, GatherWithRepeatedIds) {
  GradientCheck(81)
      .uniform("table", {5, 3})
      .values("ids", {2, 3}, {4, 0, 4, 2, 4, 1}, DType::I32)
      .op("%y = loom.gather %table, %ids : (tensor<5x3xf32>, tensor<2x3xi32>) "
          "-> tensor<2x3x3xf32>")
      .check({2, 3, 3});
}

TEST(GradientCheck, ScatterAdd) {
  GradientCheck(82)
      .uniform("updates", {4, 3})
      .values("ids", {4}, {3, 0, 3, 1}, DType::I64)
      .uniform("like", {5, 3})
      .op("%y = loom.scatter_add %updates, %ids, %like : (tensor<4x3xf32>, "
          "tensor<4xi64>, tensor<5x3xf32>) -> tensor<5x3xf32>")
      .check({5, 3});
}

//===----------------------------------------------------------------------===//
// Accumulation and composition
//===----------------------------------------------------------------------===//

TEST(GradientCheck, ValueUsedTwice) {
  // %x feeds three uses, %s two: each accumulates.
  GradientCheck(90)
      .uniform("x", {2, 3})
      .op("%s = loom.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
          "tensor<2x3xf32>")
      .op("%e = loom.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>")
      .op("%t = loom.mul %s, %e : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
          "tensor<2x3xf32>")
      .op("%y = loom.add %t, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
          "tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, SmallNetwork) {
  // Linear -> GELU -> LayerNorm -> projection -> cross entropy, with a
  // padding target ignored.
  GradientCheck(91)
      .uniform("x", {2, 3, 4})
      .uniform("w1", {5, 4}, -0.7, 0.7)
      .uniform("b1", {5}, -0.2, 0.2)
      .uniform("gamma", {5}, 0.8, 1.2)
      .uniform("beta", {5}, -0.1, 0.1)
      .uniform("w2", {5, 6}, -0.7, 0.7)
      .values("targets", {2, 3}, {1, 5, 0, 2, 0, 3}, DType::I32)
      .op("%h = loom.matmul %x, %w1 {transpose_rhs} : (tensor<2x3x4xf32>, "
          "tensor<5x4xf32>) -> tensor<2x3x5xf32>")
      .op("%hb = loom.add %h, %b1 : (tensor<2x3x5xf32>, tensor<5xf32>) -> "
          "tensor<2x3x5xf32>")
      .op("%a = loom.gelu %hb : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>")
      .op("%n = loom.layer_norm %a, %gamma, %beta {epsilon = 1.0e-05 : f64} "
          ": (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> "
          "tensor<2x3x5xf32>")
      .op("%logits = loom.matmul %n, %w2 : (tensor<2x3x5xf32>, "
          "tensor<5x6xf32>) -> tensor<2x3x6xf32>")
      .op("%y = loom.cross_entropy %logits, %targets {label_smoothing = "
          "1.0e-01 : f64, ignore_index = 0 : i64} : (tensor<2x3x6xf32>, "
          "tensor<2x3xi32>) -> tensor<2x3xf32>")
      .check({2, 3});
}

TEST(GradientCheck, CausalAttentionWithDynamicShapes) {
  // Batch and sequence dims are dynamic; the causal mask takes its size from
  // %x but no gradient; the mean divides by a count measured at run time.
  std::vector<double> x = {0.3,  -0.5, 0.8,  0.1,  -0.9, 0.4,  0.2, -0.3,
                           0.7,  0.6,  -0.2, -0.8, 0.5,  -0.1, 0.9, -0.6,
                           -0.4, 0.2,  0.3,  0.8,  -0.7, 0.1,  0.6, -0.5};
  GradientCheck(92)
      .values("x", {2, 3, 4}, x, DType::F32, {-1, -1, 4})
      .uniform("wq", {4, 4})
      .values("seed", {}, {5}, DType::I64)
      .op("%q = loom.matmul %x, %wq {transpose_rhs} : (tensor<?x?x4xf32>, "
          "tensor<4x4xf32>) -> tensor<?x?x4xf32>")
      .op("%s = loom.matmul %q, %x {transpose_rhs} : (tensor<?x?x4xf32>, "
          "tensor<?x?x4xf32>) -> tensor<?x?x?xf32>")
      .op("%m = loom.causal_mask %x {dim = 1 : i64} : tensor<?x?x4xf32> -> "
          "tensor<?x?xf32>")
      .op("%sm = loom.add %s, %m : (tensor<?x?x?xf32>, tensor<?x?xf32>) -> "
          "tensor<?x?x?xf32>")
      .op("%p = loom.softmax %sm {axis = 2 : i64} : (tensor<?x?x?xf32>) -> "
          "tensor<?x?x?xf32>")
      .op("%pd = loom.dropout %p, %seed {rate = 3.0e-01 : f64, offset = 1 : "
          "i64} : (tensor<?x?x?xf32>, tensor<i64>) -> tensor<?x?x?xf32>")
      .op("%o = loom.matmul %pd, %x : (tensor<?x?x?xf32>, tensor<?x?x4xf32>) "
          "-> tensor<?x?x4xf32>")
      .op("%y = loom.reduce_mean %o [1] keep_dims : (tensor<?x?x4xf32>) -> "
          "tensor<?x1x4xf32>")
      .check({2, 1, 4}, "f32", "tensor<?x1x4xf32>");
}
