//===- FusedOpVerifiers.cpp - Verifiers of the fused ops ------------------===//
//
// The fused ops (attention, linear, add_layer_norm, fusion) are introduced by
// passes, not written by hand, so their verifiers are the net that catches a
// pass that built one wrong. Each message names the operand and both shapes.
//
//===----------------------------------------------------------------------===//

#include "ir/AttributeVerifiers.h"
#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"

using namespace mlir;
using namespace loom;

static RankedTensorType rankedOrNull(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Dims a and b may be equal or one of them dynamic.
static bool compatibleDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static bool compatibleShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!compatibleDim(x, y))
      return false;
  return true;
}

/// Shared by attention and its gradient: q [..., Sq, D], k [..., Sk, D],
/// v [..., Sk, Dv], mask broadcasting to [..., Sq, Sk], dropout settings.
/// Whether `op` reads its keys position first ([Sk, ..., D]).
static bool keysPositionMajor(AttentionOp op) {
  return op.getKeysPositionMajor();
}
static bool keysPositionMajor(AttentionGradOp) { return false; }

/// Whether keys and values of element type `kv` may be read with queries of
/// `q`: the same type, or for the forward bf16 or f16 keys and values with f32
/// queries (a decoder's caches held narrow, loom-cache-precision); scores,
/// softmax and the output stay f32 either way.
static bool narrowKeysAllowed(AttentionOp, Type q, Type kv) {
  return isProductResultType(kv, q);
}
static bool narrowKeysAllowed(AttentionGradOp, Type q, Type kv) {
  return q == kv;
}

/// `type` [Sk, ..., D] as the [..., Sk, D] it stands for.
static RankedTensorType positionMinor(RankedTensorType type) {
  if (!type || type.getRank() < 2)
    return type;
  SmallVector<int64_t> shape = llvm::to_vector(type.getShape().drop_front());
  shape.insert(shape.end() - 1, type.getDimSize(0));
  return RankedTensorType::get(shape, type.getElementType());
}

template <typename OpTy> static LogicalResult verifyAttentionOperands(OpTy op) {
  auto q = rankedOrNull(op.getQ()), k = rankedOrNull(op.getK()),
       v = rankedOrNull(op.getV());
  if (!q || !k || !v)
    return op.emitOpError("needs ranked q, k and v");
  if (keysPositionMajor(op)) {
    k = positionMinor(k);
    v = positionMinor(v);
  }
  if (q.getRank() < 2 || q.getRank() != k.getRank() ||
      q.getRank() != v.getRank())
    return op.emitOpError("needs q, k and v of one rank (2 or more), got ")
           << formatShape(q.getShape()) << ", " << formatShape(k.getShape())
           << " and " << formatShape(v.getShape());
  if (k.getElementType() != v.getElementType() ||
      !narrowKeysAllowed(op, q.getElementType(), k.getElementType()))
    return op.emitOpError("needs q, k and v of one element type")
           << (isa<AttentionOp>(op.getOperation())
                   ? " (or k and v of bf16 or f16 with an f32 q)"
                   : "")
           << ", got " << q.getElementType() << ", " << k.getElementType()
           << " and " << v.getElementType();
  int64_t r = q.getRank();
  if (!compatibleShapes(q.getShape().drop_back(2), k.getShape().drop_back(2)) ||
      !compatibleShapes(q.getShape().drop_back(2), v.getShape().drop_back(2)))
    return op.emitOpError("needs equal leading dims of q, k and v, got ")
           << formatShape(q.getShape()) << ", " << formatShape(k.getShape())
           << " and " << formatShape(v.getShape());
  if (!compatibleDim(q.getDimSize(r - 1), k.getDimSize(r - 1)))
    return op.emitOpError("q and k differ in their last dim: ")
           << formatShape(q.getShape()) << " and " << formatShape(k.getShape());
  if (!compatibleDim(k.getDimSize(r - 2), v.getDimSize(r - 2)))
    return op.emitOpError("k and v differ in their number of keys: ")
           << formatShape(k.getShape()) << " and " << formatShape(v.getShape());
  if (auto mask = rankedOrNull(op.getMask())) {
    SmallVector<int64_t> scores = llvm::to_vector(q.getShape().drop_back());
    scores.push_back(k.getDimSize(r - 2));
    auto b = broadcastShapes(scores, mask.getShape());
    if (!b || mask.getRank() > r || !compatibleShapes(*b, scores))
      return op.emitOpError("mask ")
             << formatShape(mask.getShape())
             << " does not broadcast to the scores " << formatShape(scores);
    if (mask.getElementType() != q.getElementType())
      return op.emitOpError("mask must have the element type of q");
  }
  double rate = op.getDropoutRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return op.emitOpError("dropout_rate must be in [0, 1), got ") << rate;
  if (rate > 0.0 && !op.getSeed())
    return op.emitOpError("dropout needs a seed operand");
  if (auto seed = rankedOrNull(op.getSeed()); seed && seed.getRank() != 0)
    return op.emitOpError("seed must be tensor<i64>");
  return success();
}

/// out [..., Sq, Dv] and lse [..., Sq] for the given q and v.
template <typename OpTy>
static LogicalResult verifyAttentionOutputs(OpTy op, Value out, Value lse) {
  auto q = cast<RankedTensorType>(op.getQ().getType());
  auto v = cast<RankedTensorType>(op.getV().getType());
  SmallVector<int64_t> outShape = llvm::to_vector(q.getShape().drop_back());
  outShape.push_back(v.getShape().back());
  auto o = rankedOrNull(out), l = rankedOrNull(lse);
  if (!o || !compatibleShapes(o.getShape(), outShape) ||
      o.getElementType() != q.getElementType())
    return op.emitOpError("out must be [")
           << formatShape(outShape) << "] of " << q.getElementType() << ", got "
           << out.getType();
  if (!l || !compatibleShapes(l.getShape(), q.getShape().drop_back()))
    return op.emitOpError("lse must be [")
           << formatShape(q.getShape().drop_back()) << "], got "
           << lse.getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this)) ||
      failed(verifyScale(*this, getScale().convertToDouble())) ||
      failed(verifyRate(*this, "dropout_rate",
                        getDropoutRate().convertToDouble())))
    return failure();
  if (getKeysPositionMajor() && getDropoutRate().convertToDouble() > 0.0)
    return emitOpError("keys_position_major is for inference: no dropout");
  return verifyAttentionOutputs(*this, getOut(), getLse());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(*this)) ||
      failed(verifyAttentionOutputs(*this, getOut(), getLse())) ||
      failed(verifyScale(*this, getScale().convertToDouble())) ||
      failed(verifyRate(*this, "dropout_rate",
                        getDropoutRate().convertToDouble())))
    return failure();
  if (getDout().getType() != getOut().getType())
    return emitOpError("dout must have the type of out, got ")
           << getDout().getType();
  if (getDq().getType() != getQ().getType() ||
      getDk().getType() != getK().getType() ||
      getDv().getType() != getV().getType())
    return emitOpError("dq, dk and dv must have the types of q, k and v");
  return success();
}

LogicalResult LinearOp::verify() {
  auto x = rankedOrNull(getInput()), w = rankedOrNull(getWeight());
  auto y = rankedOrNull(getResult());
  if (!x || !w || !y)
    return emitOpError("needs ranked tensors");
  if (x.getRank() < 1 || w.getRank() != 2)
    return emitOpError("needs input [..., K] and weight [N, K], got ")
           << formatShape(x.getShape()) << " and " << formatShape(w.getShape());
  if (!compatibleDim(x.getShape().back(), w.getDimSize(1)))
    return emitOpError("input ") << formatShape(x.getShape()) << " and weight "
                                 << formatShape(w.getShape()) << " differ in K";
  if (x.getElementType() != w.getElementType() ||
      !isProductResultType(x.getElementType(), y.getElementType()))
    return emitOpError("needs input and weight of one element type and a "
                       "result of theirs (or f32 for bf16 or f16), got ")
           << x.getElementType() << ", " << w.getElementType() << " and "
           << y.getElementType();
  SmallVector<int64_t> expected = llvm::to_vector(x.getShape().drop_back());
  expected.push_back(w.getDimSize(0));
  if (!compatibleShapes(y.getShape(), expected))
    return emitOpError("result must be [")
           << formatShape(expected) << "], got " << formatShape(y.getShape());
  if (auto b = rankedOrNull(getBias()))
    if (b.getRank() != 1 || !compatibleDim(b.getDimSize(0), w.getDimSize(0)) ||
        b.getElementType() != y.getElementType())
      return emitOpError("bias must be [")
             << w.getDimSize(0) << "], got " << getBias().getType();
  if (auto r = rankedOrNull(getResidual()))
    if (!compatibleShapes(r.getShape(), y.getShape()) ||
        r.getElementType() != y.getElementType())
      return emitOpError("residual must have the result's shape, got ")
             << formatShape(r.getShape());
  return success();
}

LogicalResult AddLayerNormOp::verify() {
  auto x = rankedOrNull(getInput()), r = rankedOrNull(getResidual());
  if (!x || !r || x.getRank() < 1)
    return emitOpError("needs ranked input and residual of rank 1 or more");
  if (x != r)
    return emitOpError("input and residual must have one type, got ")
           << x << " and " << r;
  int64_t d = x.getShape().back();
  for (Value p : {getGamma(), getBeta()}) {
    auto t = rankedOrNull(p);
    if (!t || t.getRank() != 1 || !compatibleDim(t.getDimSize(0), d) ||
        t.getElementType() != x.getElementType())
      return emitOpError("needs gamma and beta of shape [")
             << d << "], got " << p.getType();
  }
  if (getSum().getType() != x || getResult().getType() != x)
    return emitOpError("results must have the input's type");
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " inputs but its block takes "
           << body.getNumArguments() << " arguments";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getInputs(), body.getArguments())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError("input ")
             << i << " has type " << std::get<0>(pair).getType()
             << " but block argument " << i << " has type "
             << std::get<1>(pair).getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().getTypes()
                                  << " but returns " << getResultTypes();
  return success();
}
