//===- GradientUtils.cpp - Helpers shared by the gradient rules -----------===//

#include "ir/GradientUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>

using namespace mlir;

namespace loom {

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool isFloatTensor(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  return shaped && isa<FloatType>(shaped.getElementType());
}

Value scalarConstant(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute scalar =
      isa<FloatType>(element)
          ? Attribute(b.getFloatAttr(element, value))
          : Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, scalar));
}

Value scalarLike(OpBuilder &b, Location loc, Value like, double value) {
  return scalarConstant(b, loc, elementTypeOf(like), value);
}

Value zerosLike(OpBuilder &b, Location loc, Value like) {
  return b.create<BroadcastAsOp>(loc, scalarLike(b, loc, like, 0.0), like);
}

Value sumToOperand(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (grad.getType() == operand.getType())
    return grad;
  return b.create<SumToOp>(loc, grad, operand);
}

Value restoreReducedDims(OpBuilder &b, Location loc, Value reduced,
                         ArrayRef<int64_t> dims, bool keepDims) {
  // A rank-0 value broadcasts as it is; others need their size-1 dims back.
  if (keepDims || dims.empty() ||
      cast<ShapedType>(reduced.getType()).getRank() == 0)
    return reduced;
  SmallVector<int64_t> sorted(dims);
  std::sort(sorted.begin(), sorted.end());
  return b.create<ExpandDimsOp>(loc, reduced, sorted);
}

Value unreduce(OpBuilder &b, Location loc, Value reduced, Value input,
               ArrayRef<int64_t> dims, bool keepDims) {
  reduced = restoreReducedDims(b, loc, reduced, dims, keepDims);
  if (reduced.getType() == input.getType())
    return reduced;
  return b.create<BroadcastAsOp>(loc, reduced, input);
}

LayerNormGradients buildLayerNormGradients(OpBuilder &b, Location loc, Value g,
                                           Value x, Value gamma, Value beta,
                                           double epsilon) {
  // With xhat = (x - mean) * rstd and dxhat = g * gamma:
  //   dx     = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
  //   dgamma = sum over rows of g * xhat,  dbeta = sum over rows of g.
  SmallVector<int64_t> last = {cast<RankedTensorType>(x.getType()).getRank() -
                               1};
  auto rowMean = [&](Value v) -> Value {
    return b.create<ReduceMeanOp>(loc, v, last, true);
  };
  Value centered = b.create<SubOp>(loc, x, rowMean(x));
  Value var = rowMean(b.create<MulOp>(loc, centered, centered));
  Value eps = scalarLike(b, loc, x, epsilon);
  Value rstd = b.create<RsqrtOp>(loc, b.create<AddOp>(loc, var, eps));
  Value xhat = b.create<MulOp>(loc, centered, rstd);

  Value dxhat = b.create<MulOp>(loc, g, gamma);
  Value m1 = rowMean(dxhat);
  Value m2 = rowMean(b.create<MulOp>(loc, dxhat, xhat));
  Value inner = b.create<SubOp>(loc, b.create<SubOp>(loc, dxhat, m1),
                                b.create<MulOp>(loc, xhat, m2));
  LayerNormGradients grads;
  grads.input = sumToOperand(b, loc, b.create<MulOp>(loc, rstd, inner), x);
  grads.gamma = sumToOperand(b, loc, b.create<MulOp>(loc, g, xhat), gamma);
  grads.beta = sumToOperand(b, loc, g, beta);
  return grads;
}

} // namespace loom
