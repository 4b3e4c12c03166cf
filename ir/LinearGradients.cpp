//===- LinearGradients.cpp - Gradients of linear, add_layer_norm ----------===//
//
// loom.linear computes y = act(x W^T + b) + r. Its backward is the one of the
// unfused graph, with the activation's derivative taken at the
// pre-activation p = x W^T + b:
//
//   dp = g * act'(p)       dx = dp W        dW = dp^T x  (over all rows)
//   db = sum of dp over rows                dr = g
//
// dW is one [N, M] x [M, K] product over the flattened rows instead of a
// batched product summed afterwards, which would materialize one [N, K]
// matrix per batch entry.
//
// loom.add_layer_norm's sum is both a result and the normalized input, so
// its gradient is the layer-norm gradient plus the sum's own, and flows
// unchanged to both addends.
//
//===----------------------------------------------------------------------===//

#include "ir/GradientUtils.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace loom;

/// `g * act'(pre)` for the activation `act`, built by the elementwise op's own
/// rule so that the fused and the unfused graph differentiate alike. The
/// activation op is only a vehicle for its rule and is erased again.
template <typename ActOp>
static FailureOr<Value> activationGradient(OpBuilder &b, Location loc,
                                           Value pre, Value g) {
  auto act = b.create<ActOp>(loc, pre);
  SmallVector<Value> grads;
  if (failed(act.buildGradients(b, ValueRange{g}, grads)) || grads.size() != 1)
    return failure();
  if (act->use_empty())
    act->erase();
  return grads[0];
}

LogicalResult LinearOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0], x = getInput(), w = getWeight(), bias = getBias(),
        residual = getResidual();
  Activation act = getActivation();
  if (getElementTypeOrSelf(x) != getElementTypeOrSelf(getResult()))
    return emitOpError("sums narrow products in a wider type, as "
                       "loom-mixed-precision builds it after autodiff; such "
                       "a linear has no gradient rule");

  // The forward keeps only act(p) + r, not p. relu without a residual reads
  // its mask off the result (y > 0 exactly where p > 0); otherwise, and for
  // gelu whose derivative needs p itself, p is recomputed by a loom.linear
  // without activation and residual: one GEMM instead of an activation kept
  // alive between the passes.
  Value dpre = g;
  if (act == Activation::relu && !residual) {
    Value y = getResult();
    Value positive = b.create<CompareOp>(loc, ComparePredicate::gt, y,
                                         scalarLike(b, loc, y, 0.0));
    dpre = b.create<SelectOp>(loc, positive, g, scalarLike(b, loc, g, 0.0));
  } else if (act != Activation::none) {
    Value pre = b.create<LinearOp>(loc, getResult().getType(), x, w, bias,
                                   Value(), Activation::none);
    FailureOr<Value> d = act == Activation::relu
                             ? activationGradient<ReluOp>(b, loc, pre, g)
                             : activationGradient<GeluOp>(b, loc, pre, g);
    if (failed(d))
      return emitOpError("could not differentiate its activation");
    dpre = *d;
  }

  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t n = wType.getDimSize(0), k = wType.getDimSize(1);
  auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    return b.create<ReshapeOp>(loc, v, shape);
  };
  auto transposedProduct = [&](Value lhs, Value rhs) -> Value {
    return b.create<MatmulOp>(loc, lhs, rhs, /*transpose_lhs=*/true,
                              /*transpose_rhs=*/false);
  };

  // dx = dp W: [..., N] x [N, K]. A rank-1 input is a single row.
  Value dx;
  if (xType.getRank() == 1)
    dx = b.create<ReshapeAsOp>(
        loc, b.create<MatmulOp>(loc, reshape(dpre, {1, -1}), w), x);
  else
    dx = b.create<MatmulOp>(loc, dpre, w);
  operandGrads.push_back(sumToOperand(b, loc, dx, x));

  // dW = dp^T x over every row: the rows are flattened to [M, N] and [M, K]
  // when N and K are known; with a dynamic N or K the batched product is
  // summed over its batch dims instead.
  Value dw;
  if (xType.getRank() == 1)
    dw = transposedProduct(reshape(dpre, {1, -1}), reshape(x, {1, -1}));
  else if (xType.getRank() == 2)
    dw = transposedProduct(dpre, x);
  else if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(k))
    dw = transposedProduct(reshape(dpre, {-1, n}), reshape(x, {-1, k}));
  else
    dw = transposedProduct(dpre, x);
  operandGrads.push_back(sumToOperand(b, loc, dw, w));

  if (bias)
    operandGrads.push_back(sumToOperand(b, loc, dpre, bias));
  if (residual)
    operandGrads.push_back(sumToOperand(b, loc, g, residual));
  return success();
}

LogicalResult
AddLayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  LayerNormGradients norm =
      buildLayerNormGradients(b, loc, resultGrads[1], getSum(), getGamma(),
                              getBeta(), getEpsilon().convertToDouble());
  // When the sum has no other use its gradient is zeros: skip adding them.
  Value dsum = norm.input;
  if (!getSum().use_empty())
    dsum = b.create<AddOp>(loc, dsum, resultGrads[0]);
  operandGrads.push_back(sumToOperand(b, loc, dsum, getInput()));
  operandGrads.push_back(sumToOperand(b, loc, dsum, getResidual()));
  operandGrads.push_back(norm.gamma);
  operandGrads.push_back(norm.beta);
  return success();
}
