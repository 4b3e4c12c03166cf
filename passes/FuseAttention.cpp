//===- FuseAttention.cpp - Scaled dot-product attention into one op -------===//
//
// Attention written out is a chain of ops around an [..., Sq, Sk] score
// matrix that a fused kernel never materializes:
//
//   %s = loom.matmul %q, %k {transpose_rhs}   // or matmul(q, transpose(k))
//   %t = loom.mul %s, %c                      // or div by sqrt(d_k) (ONNX), or
//                                             // matmul(mul(q, c), k^T)
//   %m = loom.add %t, %mask                   // any number of masks, or
//                                             // loom.select %allowed, %t, -1e9
//                                             // (masked_fill; the fill is
//                                             // at most -1e4 or -inf)
//   %p = loom.softmax %m {axis = last}
//   %d = loom.dropout %p, %seed               // optional
//   %o = loom.matmul %d, %v
//     ==>
//   %o, %lse = loom.attention %q, %k, %v mask(%mask) seed(%seed)
//                  {scale = c, causal, dropout_rate, dropout_offset}
//
// Matching starts at each softmax, walks down to the matmul with v and up
// through the additions to the one addend that is a (scaled) q k^T. The other
// addends are masks; a mask that is itself a sum (the frontend's
// `padding + causal`, shared by every decoder layer) is looked into, and a
// loom.causal_mask addend of the query/key length becomes the `causal` flag,
// which a kernel applies from indices instead of reading an Sq x Sk mask.
// What remains is summed into the one `mask` operand. A masked_fill becomes
// the additive mask select(%allowed, 0, fill): a masked score then weighs
// exp(score + fill - max) instead of exp(fill - max), 0 either way in float
// (a row masked whole is uniform either way with a finite fill, NaN with
// -inf, as in PyTorch).
//
// Every value inside the chain must have exactly one use: the fused op does
// not produce it, so another user would keep the unfused chain alive (and
// after autodiff, the backward reads the probabilities: the pass runs before
// it). q, k, v, the masks and the seed are leaves and may be shared. The head
// reshapes and transposes around the chain stay: the fused op takes the
// per-head [B, H, S, Dh] operands the chain took.
//
// Without dropout (inference), the probabilities may have readers besides
// the matmul with v (a decoder step that returns where it attended): the
// chain is fused all the same, and the readers get the probabilities
// rebuilt from the fused op's row statistic,
//
//   %w = loom.exp (loom.sub %m, (loom.expand_dims %lse [-1]))
//
// the scores chain then stays alive for them. Only a function that reads
// the weights pays for them; every other keeps the one fused op.
//
// With `remarks`, each softmax that is not fused says why, as XLA's
// FusionDecision does, so a model whose attention does not fuse is easy to
// diagnose.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <string>

namespace loom {
#define GEN_PASS_DEF_LOOMFUSEATTENTION
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The value of `c` when it is a one-element float constant and scaling
/// `other` by it (giving `result`) keeps the type: a scale, not a broadcast.
std::optional<double> scalarConstant(Value c, Value result, Value other) {
  auto constant = c.getDefiningOp<ConstantOp>();
  if (!constant || result.getType() != other.getType())
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// One candidate: what the chain of one softmax reads and which ops it is.
struct Candidate {
  SoftmaxOp softmax;
  DropoutOp dropout;
  MatmulOp output;
  Value q, k, v;
  double scale = 1.0;
  bool causal = false;
  SmallVector<Value> masks;
  /// Selects that fill masked scores with a large negative number
  /// (`masked_fill`), with whether the scores are their on_true operand:
  /// each becomes the additive mask select(cond, 0, fill).
  SmallVector<std::pair<SelectOp, bool>> fills;
  /// The values from the softmax's input down to q k^T, outermost first:
  /// the fused op replaces them, so each must have one use.
  SmallVector<Value> scoreChain;
  Value product;
  /// Uses of the probabilities other than the matmul with v (no dropout):
  /// they read probabilities rebuilt from the fused op's lse.
  SmallVector<OpOperand *> weightReaders;
};

class AttentionMatcher {
public:
  explicit AttentionMatcher(SoftmaxOp softmax) { c.softmax = softmax; }

  /// Matches the chain around the softmax; on failure, `reason` says why.
  LogicalResult match();

  Candidate c;
  std::string reason;

private:
  LogicalResult decline(const Twine &why) {
    reason = why.str();
    return failure();
  }
  LogicalResult matchOutput();
  LogicalResult matchScores();
  /// Finds the q k^T addend under `x` (through additions), appending the
  /// values on its path to `scoreChain` and the other addends to `masks`.
  bool findProduct(Value x);
  /// Whether `x` is a (scaled) q k^T; fills q, k and the scale if so.
  bool matchProduct(Value x);
  /// Strips multiplications and divisions by scalar constants from `x`,
  /// folding them into the scale; the stripped values go to `path`.
  Value peelScale(Value x, SmallVectorImpl<Value> *path);
  void addMask(Value mask);

  /// Set when an addend looked like scaled scores but its scale was not a
  /// scalar constant: the best explanation when no product is found.
  bool badScale = false;
};

LogicalResult AttentionMatcher::match() {
  if (failed(matchOutput()) || failed(matchScores()))
    return failure();
  auto q = cast<RankedTensorType>(c.q.getType());
  auto k = cast<RankedTensorType>(c.k.getType());
  auto v = dyn_cast<RankedTensorType>(c.v.getType());
  int64_t rank = q.getRank();
  auto compatible = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
    return succeeded(verifyCompatibleShape(a, b));
  };
  if (!v || k.getRank() != rank || v.getRank() != rank ||
      !compatible(q.getShape().drop_back(2), k.getShape().drop_back(2)) ||
      !compatible(q.getShape().drop_back(2), v.getShape().drop_back(2)))
    return decline("q, k and v differ in their batch dims");
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return decline("q, k and v differ in their element types");
  for (Value mask : c.masks) {
    auto m = dyn_cast<RankedTensorType>(mask.getType());
    if (!m || m.getElementType() != q.getElementType())
      return decline("a mask has another element type than the scores");
  }
  if (!std::isfinite(c.scale))
    return decline("the scale is not finite");
  return success();
}

LogicalResult AttentionMatcher::matchOutput() {
  SoftmaxOp softmax = c.softmax;
  auto type = cast<RankedTensorType>(softmax.getType());
  if (type.getRank() < 2 ||
      static_cast<int64_t>(softmax.getAxis()) != type.getRank() - 1)
    return decline("softmax is not over the last axis");
  Value probs = softmax.getResult();
  Operation *user = nullptr;
  if (probs.hasOneUse()) {
    user = *probs.user_begin();
  } else {
    // One use is the matmul with v; the others read the weights, which
    // rewrite() rebuilds for them. Not with dropout: its probabilities are
    // drawn, and a backward reads them.
    for (OpOperand &use : probs.getUses()) {
      Operation *op = use.getOwner();
      if (isa<DropoutOp>(op))
        return decline("the probabilities have another use beside dropout");
      auto matmul = dyn_cast<MatmulOp>(op);
      if (!user && matmul && matmul.getLhs() == probs)
        user = op;
      else
        c.weightReaders.push_back(&use);
    }
    if (!user)
      return decline("no matmul with v follows");
  }
  if (auto dropout = dyn_cast<DropoutOp>(user)) {
    c.dropout = dropout;
    probs = dropout.getResult();
    if (!probs.hasOneUse())
      return decline("the dropped-out probabilities have another use");
    user = *probs.user_begin();
  }
  auto output = dyn_cast<MatmulOp>(user);
  if (!output || output.getLhs() != probs)
    return decline("no matmul with v follows");
  if (output.getTransposeLhs() || output.getTransposeRhs())
    return decline("the matmul with v transposes an operand");
  c.output = output;
  c.v = output.getRhs();
  return success();
}

void AttentionMatcher::addMask(Value mask) {
  // Look into a sum of masks for a causal mask; leave it whole otherwise.
  SmallVector<Value> addends, worklist = {mask};
  CausalMaskOp causal;
  while (!worklist.empty()) {
    Value x = worklist.pop_back_val();
    if (auto add = x.getDefiningOp<AddOp>()) {
      worklist.push_back(add.getRhs());
      worklist.push_back(add.getLhs());
    } else if (auto op = x.getDefiningOp<CausalMaskOp>(); op && !causal) {
      causal = op;
    } else {
      addends.push_back(x);
    }
  }
  // The causal flag masks key j > query i over the whole [Sq, Sk]; the mask
  // op's [n, n] means that only when n is the query and the key length.
  auto scores = cast<RankedTensorType>(c.softmax.getType());
  auto fits = [](int64_t a, int64_t b) {
    return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
  };
  int64_t sq = scores.getDimSize(scores.getRank() - 2),
          sk = scores.getDimSize(scores.getRank() - 1);
  if (causal && !c.causal) {
    int64_t n = cast<RankedTensorType>(causal.getType()).getDimSize(0);
    if (fits(n, sq) && fits(n, sk) && fits(sq, sk) && n != 1) {
      c.causal = true;
      c.masks.append(addends);
      return;
    }
  }
  c.masks.push_back(mask);
}

Value AttentionMatcher::peelScale(Value x, SmallVectorImpl<Value> *path) {
  while (true) {
    std::optional<double> factor;
    Value rest;
    if (auto mul = x.getDefiningOp<MulOp>()) {
      if ((factor = scalarConstant(mul.getRhs(), mul, mul.getLhs())))
        rest = mul.getLhs();
      else if ((factor = scalarConstant(mul.getLhs(), mul, mul.getRhs())))
        rest = mul.getRhs();
      else if (mul.getLhs().getDefiningOp<MatmulOp>() ||
               mul.getRhs().getDefiningOp<MatmulOp>())
        badScale = true;
    } else if (auto div = x.getDefiningOp<DivOp>()) {
      if ((factor = scalarConstant(div.getRhs(), div, div.getLhs()))) {
        factor = 1.0 / *factor;
        rest = div.getLhs();
      } else if (div.getLhs().getDefiningOp<MatmulOp>()) {
        badScale = true;
      }
    }
    if (!factor)
      return x;
    if (path)
      path->push_back(x);
    c.scale *= *factor;
    x = rest;
  }
}

/// Whether `v` is a one-element float constant that masks a score it
/// replaces: after softmax, exp(fill - max) is 0 as for an additive mask's.
bool isMaskingFill(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(constant.getValue());
  return dense && dense.getNumElements() == 1 &&
         dense.getSplatValue<APFloat>().convertToDouble() <= -1e4;
}

bool AttentionMatcher::findProduct(Value x) {
  if (auto select = x.getDefiningOp<SelectOp>()) {
    // masked_fill(scores, !allowed, -1e9): the scores on one side, the fill
    // on the other.
    for (bool scoresOnTrue : {true, false}) {
      Value scores = scoresOnTrue ? select.getOnTrue() : select.getOnFalse();
      Value fill = scoresOnTrue ? select.getOnFalse() : select.getOnTrue();
      if (!isMaskingFill(fill) || scores.getType() != select.getType())
        continue;
      size_t chain = c.scoreChain.size(), masks = c.masks.size(),
             fills = c.fills.size();
      bool causal = c.causal;
      c.scoreChain.push_back(x);
      if (findProduct(scores)) {
        c.fills.push_back({select, scoresOnTrue});
        return true;
      }
      c.scoreChain.truncate(chain);
      c.masks.truncate(masks);
      c.fills.truncate(fills);
      c.causal = causal;
    }
    return matchProduct(x);
  }
  auto add = x.getDefiningOp<AddOp>();
  if (!add)
    return matchProduct(x);
  for (auto [addend, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
    size_t chain = c.scoreChain.size(), masks = c.masks.size();
    bool causal = c.causal;
    c.scoreChain.push_back(x);
    if (findProduct(addend)) {
      addMask(other);
      return true;
    }
    c.scoreChain.truncate(chain);
    c.masks.truncate(masks);
    c.causal = causal;
  }
  return false;
}

bool AttentionMatcher::matchProduct(Value x) {
  size_t chain = c.scoreChain.size();
  double scale = c.scale;
  auto fail = [&] {
    c.scoreChain.truncate(chain);
    c.scale = scale;
    return false;
  };
  Value product = peelScale(x, &c.scoreChain);
  auto matmul = product.getDefiningOp<MatmulOp>();
  if (!matmul || matmul.getTransposeLhs())
    return fail();
  Value rhs = matmul.getRhs();
  if (!matmul.getTransposeRhs()) {
    // ONNX exports k^T as an explicit transpose of the last two dims.
    rhs = peelScale(rhs, nullptr);
    auto transpose = rhs.getDefiningOp<TransposeOp>();
    int64_t rank = cast<RankedTensorType>(rhs.getType()).getRank();
    SmallVector<int64_t> swapLast = llvm::to_vector(llvm::seq<int64_t>(rank));
    std::swap(swapLast[rank - 1], swapLast[rank - 2]);
    if (!transpose || transpose.getPerm() != ArrayRef<int64_t>(swapLast))
      return fail();
    rhs = transpose.getInput();
  }
  // Scales of q and k (the frontend of some models scales q) fold in too;
  // the ops stay for other users and go with the dead code otherwise.
  c.scoreChain.push_back(product);
  c.product = product;
  c.q = peelScale(matmul.getLhs(), nullptr);
  c.k = peelScale(rhs, nullptr);
  return true;
}

LogicalResult AttentionMatcher::matchScores() {
  Value scores = c.softmax.getInput();
  if (!findProduct(scores))
    return decline(badScale ? "the scale is not a scalar constant"
                            : "the scores are not q k^T");
  for (Value v : c.scoreChain)
    if (!v.hasOneUse())
      return decline("the scores have another use");
  // The masks must not widen the scores: the fused op's output follows q.
  if (c.product.getType() != scores.getType())
    return decline("the masks change the shape of the scores");
  return success();
}

/// Replaces the candidate's chain with one loom.attention. The producers the
/// chain read from go to `maybeDead`: a mask sum or scale constant that only
/// this chain read dies with it.
void rewrite(Candidate &c, llvm::SetVector<Operation *> &maybeDead) {
  OpBuilder b(c.output);
  Location loc = b.getFusedLoc(
      {c.product.getLoc(), c.softmax.getLoc(), c.output.getLoc()});
  SmallVector<Value> masks = c.masks;
  for (auto [select, scoresOnTrue] : c.fills) {
    Value fill = scoresOnTrue ? select.getOnFalse() : select.getOnTrue();
    auto fillType = cast<RankedTensorType>(fill.getType());
    Value zero = b.create<ConstantOp>(
        loc, cast<ElementsAttr>(DenseElementsAttr::get(
                 fillType, b.getFloatAttr(fillType.getElementType(), 0.0))));
    masks.push_back(b.create<SelectOp>(loc, select.getCond(),
                                       scoresOnTrue ? zero : fill,
                                       scoresOnTrue ? fill : zero));
  }
  Value mask;
  for (Value m : masks)
    mask = mask ? b.create<AddOp>(loc, mask, m).getResult() : m;
  auto q = cast<RankedTensorType>(c.q.getType());
  auto lseType =
      RankedTensorType::get(q.getShape().drop_back(), q.getElementType());
  // Without dropout the rate and offset keep their defaults (unprinted).
  DropoutOp dropout = c.dropout;
  auto attention = b.create<AttentionOp>(
      loc, c.output.getType(), lseType, c.q, c.k, c.v, mask,
      dropout ? dropout.getSeed() : Value(), b.getF64FloatAttr(c.scale),
      c.causal ? b.getUnitAttr() : UnitAttr(),
      dropout ? dropout.getRateAttr() : FloatAttr(),
      dropout ? dropout.getOffsetAttr() : IntegerAttr());
  c.output.getResult().replaceAllUsesWith(attention.getOut());
  // The weights' other readers: exp(scores - lse), the scores chain kept.
  if (!c.weightReaders.empty()) {
    Value scores = c.softmax.getInput();
    auto scoresType = cast<RankedTensorType>(scores.getType());
    SmallVector<int64_t> shape(lseType.getShape());
    shape.push_back(1);
    Value rowLse = b.create<ExpandDimsOp>(
        loc, RankedTensorType::get(shape, lseType.getElementType()),
        attention.getLse(),
        b.getDenseI64ArrayAttr({int64_t(shape.size()) - 1}));
    Value weights = b.create<ExpOp>(
        loc, scoresType, b.create<SubOp>(loc, scoresType, scores, rowLse));
    for (OpOperand *use : c.weightReaders)
      use->set(weights);
  }

  // Users before producers, so each op is unused when it goes.
  SmallVector<Operation *> chain = {c.output};
  if (c.dropout)
    chain.push_back(c.dropout);
  chain.push_back(c.softmax);
  if (c.weightReaders.empty())
    for (Value v : c.scoreChain)
      chain.push_back(v.getDefiningOp());
  for (Operation *op : chain) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        maybeDead.insert(def);
  }
  for (Operation *op : chain) {
    maybeDead.remove(op);
    op->erase();
  }
}

struct LoomFuseAttentionPass
    : loom::impl::LoomFuseAttentionBase<LoomFuseAttentionPass> {
  using LoomFuseAttentionBase::LoomFuseAttentionBase;

  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    llvm::SetVector<Operation *> maybeDead;
    for (SoftmaxOp softmax : softmaxes) {
      AttentionMatcher matcher(softmax);
      if (succeeded(matcher.match())) {
        rewrite(matcher.c, maybeDead);
        continue;
      }
      if (remarks)
        softmax.emitRemark("not fused: ") << matcher.reason;
    }
    // A decomposed `padding + causal` sum, a scale constant or a causal mask
    // that only the chains read is now dead.
    while (!maybeDead.empty()) {
      Operation *op = maybeDead.pop_back_val();
      if (!isOpTriviallyDead(op))
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          maybeDead.insert(def);
      op->erase();
    }
  }
};

} // namespace
