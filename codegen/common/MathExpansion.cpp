//===- MathExpansion.cpp - Math functions as arithmetic
//--------------------===//

#include "codegen/common/MathExpansion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

/// 2*pi as three floats whose sum is 2*pi to about 2^-70 (C1 is float(2pi),
/// C2 the float nearest the rest, C3 the float nearest what is left).
static constexpr double kTwoPiHigh = 6.2831854820251465;
static constexpr double kTwoPiMiddle = -1.7484555314695172e-07;
static constexpr double kTwoPiLow = -6.8604980400235275e-15;
static constexpr double kInverseTwoPi = 0.15915493667125702;

/// `x` minus the nearest multiple of 2*pi, so that the polynomial's own
/// reduction (by multiples of a one-float pi/2) sees |x| <= pi, where its
/// error stays at a few ulp; without this, the error grows with |x| (about
/// 3e-5 at x = 1000).
static Value reduceByTwoPi(OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  auto constant = [&](double v) -> Value {
    Attribute attr = b.getF32FloatAttr(float(v));
    if (auto vector = dyn_cast<VectorType>(type))
      attr = DenseElementsAttr::get(vector, attr);
    return b.create<arith::ConstantOp>(loc, cast<TypedAttr>(attr));
  };
  Value k = b.create<math::RoundEvenOp>(
      loc, b.create<arith::MulFOp>(loc, x, constant(kInverseTwoPi)));
  Value minusK = b.create<arith::NegFOp>(loc, k);
  Value r = b.create<math::FmaOp>(loc, minusK, constant(kTwoPiHigh), x);
  r = b.create<math::FmaOp>(loc, minusK, constant(kTwoPiMiddle), r);
  return b.create<math::FmaOp>(loc, minusK, constant(kTwoPiLow), r);
}

static bool isF32(Type type) { return getElementTypeOrSelf(type).isF32(); }

LogicalResult loom::expandMathFunctions(Operation *root) {
  // Once per sin and cos, before the patterns: a pattern would see its own
  // output and reduce it again.
  root->walk([](Operation *op) {
    if (!isa<math::SinOp, math::CosOp>(op) ||
        !isF32(op->getOperand(0).getType()))
      return;
    OpBuilder b(op);
    op->setOperand(0, reduceByTwoPi(b, op->getLoc(), op->getOperand(0)));
  });
  RewritePatternSet patterns(root->getContext());
  populateExpandPowFPattern(patterns);
  populateMathPolynomialApproximationPatterns(patterns);
  return applyPatternsAndFoldGreedily(root, std::move(patterns));
}
