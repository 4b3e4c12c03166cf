//===- NNGradients.cpp - Gradients of contractions, reductions, NN ops ----===//
//
// Matmul's gradients are matmuls again, with the transpose flags chosen so
// that no explicit transpose is materialized; broadcast batch dims are summed
// back with sum_to. Normalizations recompute their statistics from the input
// instead of keeping them alive from the forward pass, which costs one
// reduction and saves an activation per layer.
//
//===----------------------------------------------------------------------===//

#include "ir/GradientUtils.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace loom;

LogicalResult MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  if (getElementTypeOrSelf(lhs) != getElementTypeOrSelf(getResult()))
    return emitOpError("sums narrow products in a wider type, as "
                       "loom-mixed-precision builds it after autodiff; such "
                       "a product has no gradient rule");
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  // With C = op(A) op(B): dop(A) = G op(B)^T and dop(B) = op(A)^T G, each
  // transposed back when the operand was read transposed.
  Value dLhs, dRhs;
  if (!ta && !tb) {
    dLhs = b.create<MatmulOp>(loc, g, rhs, false, true); // G B^T
    dRhs = b.create<MatmulOp>(loc, lhs, g, true, false); // A^T G
  } else if (!ta && tb) {
    dLhs = b.create<MatmulOp>(loc, g, rhs, false, false); // G B
    dRhs = b.create<MatmulOp>(loc, g, lhs, true, false);  // G^T A
  } else if (ta && !tb) {
    dLhs = b.create<MatmulOp>(loc, rhs, g, false, true);  // B G^T
    dRhs = b.create<MatmulOp>(loc, lhs, g, false, false); // A G
  } else {
    dLhs = b.create<MatmulOp>(loc, rhs, g, true, true); // B^T G^T
    dRhs = b.create<MatmulOp>(loc, g, lhs, true, true); // G^T A^T
  }
  operandGrads.push_back(sumToOperand(b, loc, dLhs, lhs));
  operandGrads.push_back(sumToOperand(b, loc, dRhs, rhs));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult
ReduceSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(unreduce(b, getLoc(), resultGrads[0], getInput(),
                                  getDims(), getKeepDims()));
  return success();
}

/// How many elements the reduced `dims` of `input` span, as a rank-0 tensor
/// of its element type. Dynamic dims are measured at run time, each from an
/// iota along it (cheap: one element per position, not per input element).
/// The count is formed in f32 (f64 for f64 inputs): f16 and bf16 cannot count
/// past 2048 and 256 one by one.
static Value reducedCount(OpBuilder &b, Location loc, Value input,
                          ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(input.getType());
  Type element = type.getElementType();
  Type countType = element.isF64() ? element : b.getF32Type();
  int64_t staticCount = 1;
  Value count;
  for (int64_t d : dims) {
    if (!type.isDynamicDim(d)) {
      staticCount *= type.getDimSize(d);
      continue;
    }
    Value positions = b.create<IotaOp>(
        loc, RankedTensorType::get({ShapedType::kDynamic}, countType), input,
        d);
    Value ones = b.create<BroadcastAsOp>(
        loc, scalarConstant(b, loc, countType, 1.0), positions);
    Value n = b.create<ReduceSumOp>(loc, ones, ArrayRef<int64_t>{0}, false);
    count = count ? b.create<MulOp>(loc, count, n).getResult() : n;
  }
  if (!count)
    return scalarConstant(b, loc, element, staticCount);
  if (staticCount != 1)
    count = b.create<MulOp>(loc, count,
                            scalarConstant(b, loc, countType, staticCount));
  if (countType != element)
    count = b.create<CastOp>(loc, RankedTensorType::get({}, element), count);
  return count;
}

LogicalResult
ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  // Divide by the count rather than multiply by its reciprocal: the count is
  // usually exact in the element type, 1/count rarely is.
  Location loc = getLoc();
  Value g = b.create<DivOp>(loc, resultGrads[0],
                            reducedCount(b, loc, getInput(), getDims()));
  operandGrads.push_back(
      unreduce(b, loc, g, getInput(), getDims(), getKeepDims()));
  return success();
}

LogicalResult
ReduceMaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  // The gradient goes to the positions that attain the maximum; tied
  // positions share it equally (as torch.amax does), so the rule stays the
  // adjoint of a subgradient whatever the ties.
  Location loc = getLoc();
  Value input = getInput();
  Value max = unreduce(b, loc, getResult(), input, getDims(), getKeepDims());
  Value atMax = b.create<CompareOp>(loc, ComparePredicate::eq, input, max);
  Value mask = b.create<SelectOp>(loc, atMax, scalarLike(b, loc, input, 1.0),
                                  scalarLike(b, loc, input, 0.0));
  Value ties = b.create<ReduceSumOp>(loc, mask, getDims(), true);
  Value g =
      restoreReducedDims(b, loc, resultGrads[0], getDims(), getKeepDims());
  Value share = b.create<DivOp>(loc, g, ties);
  operandGrads.push_back(
      sumToOperand(b, loc, b.create<MulOp>(loc, mask, share), input));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax and normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // y * (g - sum(g * y))
  Location loc = getLoc();
  Value g = resultGrads[0], y = getResult();
  int64_t axis = getAxis();
  Value dot = b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, g, y),
                                    ArrayRef<int64_t>{axis}, true);
  operandGrads.push_back(b.create<MulOp>(loc, y, b.create<SubOp>(loc, g, dot)));
  return success();
}

LogicalResult
LogSoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  // g - softmax(x) * sum(g), with softmax(x) = exp(y).
  Location loc = getLoc();
  Value g = resultGrads[0];
  int64_t axis = getAxis();
  Value total = b.create<ReduceSumOp>(loc, g, ArrayRef<int64_t>{axis}, true);
  Value p = b.create<ExpOp>(loc, getResult());
  operandGrads.push_back(
      b.create<SubOp>(loc, g, b.create<MulOp>(loc, p, total)));
  return success();
}

LogicalResult
LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  LayerNormGradients grads = buildLayerNormGradients(
      b, getLoc(), resultGrads[0], getInput(), getGamma(), getBeta(),
      getEpsilon().convertToDouble());
  operandGrads.append({grads.input, grads.gamma, grads.beta});
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout and the loss
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  // The mask is a pure function of (seed, offset, index), so the same op on
  // the gradient regenerates it: no mask is stored between the passes.
  operandGrads.push_back(b.create<DropoutOp>(
      getLoc(), resultGrads[0], getSeed(), getRateAttr(), getOffsetAttr()));
  operandGrads.push_back(Value()); // seed
  return success();
}

LogicalResult
CrossEntropyOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Value grad = b.create<CrossEntropyGradOp>(
      getLoc(), getLogits(), getTargets(), resultGrads[0],
      getLabelSmoothingAttr(), getIgnoreIndexAttr());
  operandGrads.push_back(sumToOperand(b, getLoc(), grad, getLogits()));
  operandGrads.push_back(Value()); // targets
  return success();
}
