//===- AttentionGradients.cpp - Gradient of loom.attention ----------------===//
//
// The backward of fused attention is one loom.attention_grad, which
// recomputes each row's probabilities from the forward's `lse` instead of
// keeping the Sq x Sk matrix alive between the passes, and regenerates the
// dropout mask from the seed. The mask is additive and built from ids (padding,
// causal), and the seed is an integer: neither gets a gradient.
//
//===----------------------------------------------------------------------===//

#include "ir/GradientUtils.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace loom;

/// Whether `v` is known to be zero everywhere: a splat zero constant, or one
/// broadcast (what loom-autodiff passes for a result nobody differentiated).
static bool isZeros(Value v) {
  if (auto broadcast = v.getDefiningOp<BroadcastAsOp>())
    v = broadcast.getInput();
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  return dense && dense.isSplat() && dense.getSplatValue<APFloat>().isZero();
}

LogicalResult
AttentionOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  // lse is the forward's row statistics for the backward kernel; nothing in
  // a model reads it, so its gradient has no rule.
  if (!isZeros(resultGrads[1]))
    return emitOpError("the loss depends on the lse result, which has no "
                       "gradient rule: lse is only for loom.attention_grad");
  if (getKeysPositionMajor())
    return emitOpError("keys_position_major is for inference and has no "
                       "gradient rule");
  if (getK().getType().getElementType() != getQ().getType().getElementType())
    return emitOpError("keys and values of another element type than q are "
                       "for inference (narrow decoder caches) and have no "
                       "gradient rule");
  auto grad = b.create<AttentionGradOp>(
      getLoc(), getQ().getType(), getK().getType(), getV().getType(), getQ(),
      getK(), getV(), getOut(), getLse(), resultGrads[0], getMask(), getSeed(),
      getScaleAttr(), getCausalAttr(), getDropoutRateAttr(),
      getDropoutOffsetAttr());
  operandGrads.push_back(grad.getDq());
  operandGrads.push_back(grad.getDk());
  operandGrads.push_back(grad.getDv());
  if (getMask())
    operandGrads.push_back(Value());
  if (getSeed())
    operandGrads.push_back(Value());
  return success();
}
