//===- FuseLayerNorm.cpp - LayerNorm from reductions; add + LayerNorm -----===//
//
// Two rewrites, in this order.
//
// 1. LayerNorm written out, as PyTorch's ONNX export (opset < 17) and
//    hand-written models spell it, becomes loom.layer_norm:
//
//      %m = loom.reduce_mean %x [last] keep_dims
//      %d = loom.sub %x, %m
//      %s = loom.mul %d, %d                // or loom.pow %d, 2.0
//      %v = loom.reduce_mean %s [last] keep_dims
//      %e = loom.add %v, %eps              // a splat constant
//      %r = loom.rsqrt %e                  // or 1 / sqrt(%e)
//      %n = loom.mul %d, %r                // or loom.div %d, sqrt(%e)
//      %g = loom.mul %n, %gamma            // [D], either order
//      %y = loom.add %g, %beta             // [D], either order
//      ==>
//      %y = loom.layer_norm %x, %gamma, %beta {epsilon = eps}
//
//    The match is anchored on a mean that is subtracted from its own input.
//    Every intermediate must be used only inside the pattern (the centered
//    value twice), since the fused op does not produce it.
//
// 2. A layer norm of a residual sum becomes loom.add_layer_norm, one pass
//    over the rows instead of two:
//
//      %s = loom.add %a, %b                %s, %y = loom.add_layer_norm
//      %y = loom.layer_norm %s, ...   ==>            %a, %b, ...
//      ... uses of %s ...                  ... uses of %s ...
//
//    The sum is a result of the fused op, so the add may have other uses:
//    the residual stream of a pre-norm Transformer reads it again.
//
// With `remarks`, each candidate that is not fused (a mean subtracted from
// its input, a layer norm of a loom.add) gets a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

#include <optional>

namespace loom {
#define GEN_PASS_DEF_LOOMFUSELAYERNORM
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The value of a float splat constant.
std::optional<double> splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// The only user of `v`, when it has exactly one use.
Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// When `op` is a binary op of type OpTy reading `v` as one operand (either,
/// for a commutative op) and not changing its type, the other operand.
template <typename OpTy>
Value otherOperand(Operation *op, Value v, bool commutative = true) {
  auto binary = dyn_cast_or_null<OpTy>(op);
  if (!binary || binary.getType() != v.getType())
    return {};
  if (binary.getLhs() == v)
    return binary.getRhs();
  if (commutative && binary.getRhs() == v)
    return binary.getLhs();
  return {};
}

/// Whether `op` is `a * b` or `b * a`.
bool isProductOf(Operation *op, Value a, Value b) {
  auto mul = dyn_cast_or_null<MulOp>(op);
  return mul && ((mul.getLhs() == a && mul.getRhs() == b) ||
                 (mul.getLhs() == b && mul.getRhs() == a));
}

bool isLastDimMean(ReduceMeanOp mean) {
  int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
  return mean.getKeepDims() && mean.getDims().size() == 1 &&
         mean.getDims()[0] == rank - 1;
}

/// Whether `v` is a [D] vector that scales or shifts rows of `rowType`.
bool isRowVector(Value v, RankedTensorType rowType) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 1 ||
      type.getElementType() != rowType.getElementType())
    return false;
  int64_t d = rowType.getShape().back(), n = type.getDimSize(0);
  return ShapedType::isDynamic(d) || ShapedType::isDynamic(n) || d == n;
}

/// A written-out layer norm found from its mean: the ops to replace, in
/// program order, and what the fused op needs.
struct WrittenLayerNorm {
  Value input, gamma, beta;
  double epsilon = 0;
  SmallVector<Operation *> ops;
};

class LayerNormMatcher {
public:
  explicit LayerNormMatcher(bool remarks) : remarks(remarks) {}

  /// Rewrite 1 anchored on `mean`; adds the ops it erases to `erased`.
  void fuseWrittenOut(ReduceMeanOp mean, DenseSet<Operation *> &erased);
  /// Rewrite 2 on `norm`.
  void fuseResidualAdd(LayerNormOp norm, DominanceInfo &dom);

private:
  /// Matches the pattern after the centered value `d` = x - mean; returns
  /// the reason when it does not match.
  std::string match(Value d, WrittenLayerNorm &ln);
  void decline(Operation *op, const std::string &why) {
    if (remarks)
      op->emitRemark("not fused: ") << why;
  }

  bool remarks;
};

std::string LayerNormMatcher::match(Value d, WrittenLayerNorm &ln) {
  Value x = ln.input;
  auto rowType = cast<RankedTensorType>(x.getType());
  // d feeds exactly two ops: the square and the normalization.
  SmallVector<Operation *, 2> users;
  for (Operation *user : d.getUsers())
    if (!llvm::is_contained(users, user))
      users.push_back(user);
  if (users.size() != 2)
    return "the centered value x - mean is read by " +
           std::to_string(users.size()) +
           " ops; a layer norm squares it and normalizes it, nothing else";
  auto isSquare = [&](Operation *op) {
    if (auto mul = dyn_cast<MulOp>(op))
      return mul.getLhs() == d && mul.getRhs() == d;
    if (auto pow = dyn_cast<PowOp>(op))
      return pow.getLhs() == d && splatValue(pow.getRhs()) == 2.0 &&
             pow.getType() == d.getType();
    return false;
  };
  Operation *square = isSquare(users[0])   ? users[0]
                      : isSquare(users[1]) ? users[1]
                                           : nullptr;
  if (!square)
    return "the centered value is not squared (d * d or pow(d, 2))";
  Operation *normalize = square == users[0] ? users[1] : users[0];
  ln.ops.push_back(square);

  auto var = dyn_cast_or_null<ReduceMeanOp>(soleUser(square->getResult(0)));
  if (!var || !isLastDimMean(var))
    return "the square is not averaged over the last dim with keep_dims "
           "(or has other uses)";
  ln.ops.push_back(var);
  Operation *addEps = soleUser(var.getResult());
  Value epsValue = otherOperand<AddOp>(addEps, var.getResult());
  std::optional<double> eps = epsValue ? splatValue(epsValue) : std::nullopt;
  if (!eps)
    return "the variance is not followed by + epsilon (a splat constant), or "
           "has other uses";
  ln.epsilon = *eps;
  ln.ops.push_back(addEps);

  // rsqrt(v + eps) or 1 / sqrt(v + eps), then d * r; or d / sqrt(v + eps).
  Operation *root = soleUser(addEps->getResult(0));
  bool normalizes = false;
  if (isa_and_nonnull<RsqrtOp>(root)) {
    ln.ops.push_back(root);
    Value r = root->getResult(0);
    normalizes = soleUser(r) == normalize && isProductOf(normalize, d, r);
  } else if (isa_and_nonnull<SqrtOp>(root)) {
    ln.ops.push_back(root);
    Value s = root->getResult(0);
    Operation *sUser = soleUser(s);
    auto div = dyn_cast_or_null<DivOp>(sUser);
    if (sUser == normalize) {
      normalizes = div && div.getLhs() == d && div.getRhs() == s;
    } else if (div && div.getRhs() == s && splatValue(div.getLhs()) == 1.0 &&
               div.getType() == s.getType()) {
      ln.ops.push_back(div);
      Value r = div.getResult();
      normalizes = soleUser(r) == normalize && isProductOf(normalize, d, r);
    }
  } else {
    return "the variance plus epsilon is not followed by rsqrt or sqrt (or has "
           "other uses)";
  }
  Value normalized = normalize->getResult(0);
  if (!normalizes || normalized.getType() != rowType)
    return "the centered value is not normalized by the reciprocal standard "
           "deviation (d * rsqrt, d * (1 / sqrt) or d / sqrt)";
  ln.ops.push_back(normalize);

  Operation *scale = soleUser(normalized);
  ln.gamma = otherOperand<MulOp>(scale, normalized);
  if (!ln.gamma || !isRowVector(ln.gamma, rowType))
    return "the normalized value is not scaled by a [D] gamma alone";
  ln.ops.push_back(scale);
  Operation *shift = soleUser(scale->getResult(0));
  ln.beta = otherOperand<AddOp>(shift, scale->getResult(0));
  if (!ln.beta || !isRowVector(ln.beta, rowType))
    return "the scaled value is not shifted by a [D] beta alone";
  ln.ops.push_back(shift);
  return "";
}

void LayerNormMatcher::fuseWrittenOut(ReduceMeanOp mean,
                                      DenseSet<Operation *> &erased) {
  Value x = mean.getInput();
  // A candidate is a mean subtracted from its own input.
  auto sub = llvm::find_if(mean->getUsers(), [&](Operation *op) {
    auto s = dyn_cast<SubOp>(op);
    return s && s.getLhs() == x && s.getRhs() == mean.getResult();
  });
  if (sub == mean->getUsers().end())
    return;
  if (!isLastDimMean(mean))
    return decline(mean, "the mean is not over the last dim with keep_dims");
  if (!mean->hasOneUse())
    return decline(mean, "the mean has other uses");
  Operation *center = *sub;
  if (center->getResult(0).getType() != x.getType())
    return decline(mean, "x - mean does not have the type of x");

  WrittenLayerNorm ln;
  ln.input = x;
  ln.ops = {mean, center};
  std::string why = match(center->getResult(0), ln);
  if (!why.empty())
    return decline(mean, why);

  // gamma and beta are operands of the last two ops, so the last op is where
  // every operand of the fused op is defined.
  Operation *last = ln.ops.back();
  SmallVector<Location> locs;
  for (Operation *op : ln.ops)
    locs.push_back(op->getLoc());
  OpBuilder b(last);
  auto norm = b.create<LayerNormOp>(b.getFusedLoc(locs), x, ln.gamma, ln.beta,
                                    b.getF64FloatAttr(ln.epsilon));
  last->getResult(0).replaceAllUsesWith(norm.getResult());
  // Users before producers; constants left without users go too.
  SmallVector<Operation *> constants;
  for (Operation *op : llvm::reverse(ln.ops)) {
    for (Value operand : op->getOperands())
      if (auto c = operand.getDefiningOp<ConstantOp>())
        if (!llvm::is_contained(constants, c.getOperation()))
          constants.push_back(c);
    erased.insert(op);
    op->erase();
  }
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

void LayerNormMatcher::fuseResidualAdd(LayerNormOp norm, DominanceInfo &dom) {
  // Only a norm of a loom.add is a candidate; a norm of anything else is
  // not worth a remark.
  auto add = norm.getInput().getDefiningOp<AddOp>();
  if (!add)
    return;
  Type type = add.getType();
  if (add.getLhs().getType() != type || add.getRhs().getType() != type)
    return decline(norm, "the add broadcasts its operands; "
                         "loom.add_layer_norm adds two tensors of one type");
  if (add->getBlock() != norm->getBlock())
    return decline(norm, "the add is in another block");

  // The fused op goes where the add was, so that the sum is there for the
  // add's other users; if gamma or beta come later, it goes where the norm
  // was, which is only right when no other user comes before it.
  Operation *at = add;
  if (!dom.properlyDominates(norm.getGamma(), add) ||
      !dom.properlyDominates(norm.getBeta(), add)) {
    at = norm;
    for (Operation *user : add->getUsers())
      if (user != norm && !dom.properlyDominates(norm.getOperation(), user))
        return decline(norm, "gamma or beta is computed after the add, and "
                             "the sum is used before the layer norm");
  }
  OpBuilder b(at);
  auto fused = b.create<AddLayerNormOp>(
      b.getFusedLoc({add.getLoc(), norm.getLoc()}), type, norm.getType(),
      add.getLhs(), add.getRhs(), norm.getGamma(), norm.getBeta(),
      norm.getEpsilonAttr());
  norm.getResult().replaceAllUsesWith(fused.getResult());
  norm->erase();
  add.getResult().replaceAllUsesWith(fused.getSum());
  add->erase();
}

struct LoomFuseLayerNormPass
    : loom::impl::LoomFuseLayerNormBase<LoomFuseLayerNormPass> {
  using LoomFuseLayerNormBase::LoomFuseLayerNormBase;

  void runOnOperation() override {
    LayerNormMatcher matcher(remarks);
    // A fused pattern erases its variance, itself a mean later in the
    // list: erased anchors are skipped.
    SmallVector<ReduceMeanOp> means;
    getOperation().walk([&](ReduceMeanOp op) { means.push_back(op); });
    DenseSet<Operation *> erased;
    for (ReduceMeanOp mean : means)
      if (!erased.contains(mean))
        matcher.fuseWrittenOut(mean, erased);

    SmallVector<LayerNormOp> norms;
    getOperation().walk([&](LayerNormOp op) { norms.push_back(op); });
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    for (LayerNormOp norm : norms)
      matcher.fuseResidualAdd(norm, dom);
  }
};

} // namespace
