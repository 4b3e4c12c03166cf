//===- ElementwiseGradients.cpp - Gradients of elementwise ops ------------===//
//
// Binary ops broadcast, so each operand's gradient is computed at the
// result's shape and then summed back down to the operand's own shape. Ops
// with a kink (relu, abs, maximum, minimum) pick a side with compare + select.
// At the kink itself relu and abs give 0, as PyTorch does, and a tie of
// maximum/minimum gives the whole gradient to lhs (one select instead of
// PyTorch's even split; both are subgradients).
//
//===----------------------------------------------------------------------===//

#include "ir/GradientUtils.h"

#include <cmath>

using namespace mlir;
using namespace loom;

namespace {

/// Pushes the gradient of each binary operand, or null for integer operands
/// (integer arithmetic is piecewise constant).
void pushBinary(OpBuilder &b, Location loc, Value lhs, Value rhs,
                llvm::function_ref<Value()> lhsGrad,
                llvm::function_ref<Value()> rhsGrad,
                SmallVectorImpl<Value> &operandGrads) {
  bool isFloat = isFloatTensor(lhs);
  operandGrads.push_back(isFloat ? sumToOperand(b, loc, lhsGrad(), lhs)
                                 : Value());
  operandGrads.push_back(isFloat ? sumToOperand(b, loc, rhsGrad(), rhs)
                                 : Value());
}

Value compare(OpBuilder &b, Location loc, ComparePredicate p, Value lhs,
              Value rhs) {
  return b.create<CompareOp>(loc, p, lhs, rhs);
}

/// `cond ? g : 0`.
Value keepWhere(OpBuilder &b, Location loc, Value cond, Value g) {
  return b.create<SelectOp>(loc, cond, g, scalarLike(b, loc, g, 0.0));
}

/// `cond ? 0 : g`.
Value dropWhere(OpBuilder &b, Location loc, Value cond, Value g) {
  return b.create<SelectOp>(loc, cond, scalarLike(b, loc, g, 0.0), g);
}

} // namespace

//===----------------------------------------------------------------------===//
// Binary arithmetic
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  pushBinary(
      b, getLoc(), getLhs(), getRhs(), [&] { return g; }, [&] { return g; },
      operandGrads);
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  pushBinary(
      b, loc, getLhs(), getRhs(), [&] { return g; },
      [&]() -> Value { return b.create<NegOp>(loc, g); }, operandGrads);
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  pushBinary(
      b, loc, getLhs(), getRhs(),
      [&]() -> Value { return b.create<MulOp>(loc, g, getRhs()); },
      [&]() -> Value { return b.create<MulOp>(loc, g, getLhs()); },
      operandGrads);
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  // d(a/b)/db = -a/b^2 = -(a/b)/b: the forward quotient is reused.
  pushBinary(
      b, loc, getLhs(), getRhs(),
      [&]() -> Value { return b.create<DivOp>(loc, g, getRhs()); },
      [&]() -> Value {
        Value q = b.create<DivOp>(loc, getResult(), getRhs());
        return b.create<NegOp>(loc, b.create<MulOp>(loc, g, q));
      },
      operandGrads);
  return success();
}

/// maximum/minimum: the gradient goes to the operand that won (`lhsWins`
/// compares lhs against rhs); a tie gives it to lhs.
static void pushWinnerGradients(OpBuilder &b, Location loc, Value lhs,
                                Value rhs, Value g, ComparePredicate lhsWins,
                                SmallVectorImpl<Value> &operandGrads) {
  Value wins;
  if (isFloatTensor(lhs))
    wins = compare(b, loc, lhsWins, lhs, rhs);
  pushBinary(
      b, loc, lhs, rhs, [&] { return keepWhere(b, loc, wins, g); },
      [&] { return dropWhere(b, loc, wins, g); }, operandGrads);
}

LogicalResult MaximumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  pushWinnerGradients(b, getLoc(), getLhs(), getRhs(), resultGrads[0],
                      ComparePredicate::ge, operandGrads);
  return success();
}

LogicalResult MinimumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  pushWinnerGradients(b, getLoc(), getLhs(), getRhs(), resultGrads[0],
                      ComparePredicate::le, operandGrads);
  return success();
}

LogicalResult PowOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  Location loc = getLoc();
  Value x = getLhs(), y = getRhs();
  pushBinary(
      b, loc, x, y,
      [&]() -> Value {
        // y * x^(y-1)
        Value ym1 = b.create<SubOp>(loc, y, scalarLike(b, loc, y, 1.0));
        Value d = b.create<MulOp>(loc, y, b.create<PowOp>(loc, x, ym1));
        return b.create<MulOp>(loc, g, d);
      },
      [&]() -> Value {
        // x^y * log(x); taken as 0 where x == 0, where x^y is constant 0 for
        // y > 0 (log would give -inf * 0 = NaN).
        Value d = b.create<MulOp>(loc, getResult(), b.create<LogOp>(loc, x));
        Value atZero = compare(b, loc, ComparePredicate::eq, x,
                               scalarLike(b, loc, x, 0.0));
        return b.create<MulOp>(loc, g, dropWhere(b, loc, atZero, d));
      },
      operandGrads);
  return success();
}

//===----------------------------------------------------------------------===//
// Unary math
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<NegOp>(getLoc(), resultGrads[0]));
  return success();
}

LogicalResult AbsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0], x = getInput(), zero = scalarLike(b, loc, x, 0.0);
  Value pos =
      keepWhere(b, loc, compare(b, loc, ComparePredicate::gt, x, zero), g);
  Value neg = b.create<NegOp>(loc, g);
  operandGrads.push_back(b.create<SelectOp>(
      loc, compare(b, loc, ComparePredicate::lt, x, zero), neg, pos));
  return success();
}

LogicalResult ExpOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      b.create<MulOp>(getLoc(), resultGrads[0], getResult()));
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(b.create<DivOp>(getLoc(), resultGrads[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // 1 / (2 sqrt(x)), from the forward result.
  Location loc = getLoc();
  Value half =
      b.create<MulOp>(loc, resultGrads[0], scalarLike(b, loc, getInput(), 0.5));
  operandGrads.push_back(b.create<DivOp>(loc, half, getResult()));
  return success();
}

LogicalResult RsqrtOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  // d(x^-1/2)/dx = -x^-3/2 / 2 = -0.5 * y / x.
  Location loc = getLoc();
  Value d = b.create<DivOp>(loc, getResult(), getInput());
  d = b.create<MulOp>(loc, d, scalarLike(b, loc, getInput(), -0.5));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], d));
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value d = b.create<SubOp>(loc, scalarLike(b, loc, y, 1.0),
                            b.create<MulOp>(loc, y, y));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], d));
  return success();
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getResult();
  Value d = b.create<MulOp>(
      loc, y, b.create<SubOp>(loc, scalarLike(b, loc, y, 1.0), y));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], d));
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value x = getInput();
  Value pos =
      compare(b, loc, ComparePredicate::gt, x, scalarLike(b, loc, x, 0.0));
  operandGrads.push_back(keepWhere(b, loc, pos, resultGrads[0]));
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // d(x Phi(x))/dx = Phi(x) + x phi(x)
  //               = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi).
  Location loc = getLoc();
  Value x = getInput();
  auto c = [&](double v) { return scalarLike(b, loc, x, v); };
  Value erf = b.create<ErfOp>(loc, b.create<MulOp>(loc, x, c(M_SQRT1_2)));
  Value cdf = b.create<MulOp>(loc, c(0.5), b.create<AddOp>(loc, c(1.0), erf));
  Value x2 = b.create<MulOp>(loc, x, x);
  Value pdf = b.create<MulOp>(
      loc, b.create<ExpOp>(loc, b.create<MulOp>(loc, x2, c(-0.5))),
      c(0.5 * M_2_SQRTPI * M_SQRT1_2));
  Value d = b.create<AddOp>(loc, cdf, b.create<MulOp>(loc, x, pdf));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], d));
  return success();
}

LogicalResult ErfOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  // 2 / sqrt(pi) * exp(-x^2)
  Location loc = getLoc();
  Value x = getInput();
  Value e =
      b.create<ExpOp>(loc, b.create<NegOp>(loc, b.create<MulOp>(loc, x, x)));
  Value d = b.create<MulOp>(loc, e, scalarLike(b, loc, x, M_2_SQRTPI));
  operandGrads.push_back(b.create<MulOp>(loc, resultGrads[0], d));
  return success();
}

LogicalResult SinOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  operandGrads.push_back(
      b.create<MulOp>(loc, resultGrads[0], b.create<CosOp>(loc, getInput())));
  return success();
}

LogicalResult CosOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value s = b.create<SinOp>(loc, getInput());
  operandGrads.push_back(
      b.create<NegOp>(loc, b.create<MulOp>(loc, resultGrads[0], s)));
  return success();
}

//===----------------------------------------------------------------------===//
// Select and cast
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  operandGrads.push_back(Value()); // the condition
  if (!isFloatTensor(getOnTrue())) {
    operandGrads.append(2, Value());
    return success();
  }
  operandGrads.push_back(
      sumToOperand(b, loc, keepWhere(b, loc, getCond(), g), getOnTrue()));
  operandGrads.push_back(
      sumToOperand(b, loc, dropWhere(b, loc, getCond(), g), getOnFalse()));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  // Only a float-to-float cast is differentiable: integer inputs carry no
  // gradient, and a cast to integers is piecewise constant.
  if (!isFloatTensor(getInput()) || !isFloatTensor(getResult())) {
    operandGrads.push_back(Value());
    return success();
  }
  operandGrads.push_back(
      b.create<CastOp>(getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}
