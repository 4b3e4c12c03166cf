//===- FuseLinear.cpp - GEMM and its epilogue into loom.linear ------------===//
//
// A dense layer as the frontend and PyTorch's export write it is a matmul
// against a [N, K] weight read transposed, then elementwise ops on the
// product. The pass folds the product and the elementwise ops that a GEMM
// library runs as its epilogue (cuBLASLt, oneDNN) into one loom.linear:
//
//   %p = loom.matmul %x, %w {transpose_rhs}  // [B, S, K] . [N, K]^T
//   %q = loom.add %p, %b                     // bias [N], either order
//   %h = loom.relu %q                        // or loom.gelu
//   %y = loom.add %r, %h                     // residual [B, S, N]
//   ==>
//   %y = loom.linear %x, %w bias(%b) residual(%r) activation relu
//
// The epilogue is greedy and ordered: bias, then activation, then residual,
// each optional. It stops at the first value with more than one use: a
// product or pre-activation needed elsewhere must stay materialized, and
// folding past it would compute the GEMM twice. The position-wise FFN thus
// becomes two loom.linear ops, relu in the first; the second takes the
// residual when nothing (dropout) sits between it and the residual add.
//
// Only torch's layout is fused: transpose_rhs with a rank-2 weight. Batched
// products (attention's q k^T and p v) and other layouts stay matmuls; with
// `remarks` each such matmul gets a remark saying why, in the manner of XLA's
// FusionDecision.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace loom {
#define GEN_PASS_DEF_LOOMFUSELINEAR
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// What follows the product, and the ops that computed it, in order.
struct Epilogue {
  Value bias, residual;
  Activation activation = Activation::none;
  SmallVector<Operation *> ops;
};

/// The only user of `v` when it has exactly one use in `v`'s block.
Operation *soleUser(Value v, Block *block) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *user = *v.getUsers().begin();
  return user->getBlock() == block ? user : nullptr;
}

/// When `op` is `loom.add` of `v` and another value, with the type of `v`
/// (nothing broadcasts `v` to a larger shape), the other value.
Value otherAddend(Operation *op, Value v) {
  auto add = dyn_cast_or_null<AddOp>(op);
  if (!add || add.getType() != v.getType())
    return {};
  if (add.getLhs() == v && add.getRhs() != v)
    return add.getRhs();
  if (add.getRhs() == v && add.getLhs() != v)
    return add.getLhs();
  return {};
}

/// Whether `v` can be the bias of a product of type `product`: a [N] vector
/// of its element type.
bool isBias(Value v, RankedTensorType product) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 1 ||
      type.getElementType() != product.getElementType())
    return false;
  int64_t n = product.getShape().back(), b = type.getDimSize(0);
  return ShapedType::isDynamic(n) || ShapedType::isDynamic(b) || n == b;
}

/// Whether `op` is an op the epilogue could take after `v`, for explaining
/// why it stopped.
bool couldExtend(Operation *op, Value v) {
  return isa<ReluOp, GeluOp>(op) || otherAddend(op, v);
}

class LinearFuser {
public:
  explicit LinearFuser(bool remarks) : remarks(remarks) {}

  /// Replaces `matmul` and its epilogue by one loom.linear when it has
  /// torch's layout; explains a refusal when asked to.
  void run(MatmulOp matmul);

private:
  /// Why `matmul` cannot become a loom.linear, or an empty string.
  std::string whyNot(MatmulOp matmul);
  Epilogue collectEpilogue(MatmulOp matmul);

  bool remarks;
};

std::string LinearFuser::whyNot(MatmulOp matmul) {
  auto x = dyn_cast<RankedTensorType>(matmul.getLhs().getType());
  auto w = dyn_cast<RankedTensorType>(matmul.getRhs().getType());
  auto y = dyn_cast<RankedTensorType>(matmul.getType());
  if (!x || !w || !y)
    return "the operands are not ranked tensors";
  if (matmul.getTransposeLhs())
    return "the input is read transposed (transpose_lhs); loom.linear reads "
           "x [..., K] as it is";
  if (w.getRank() != 2)
    return "the right operand has rank " + std::to_string(w.getRank()) +
           "; loom.linear takes a rank-2 weight [N, K]";
  if (!matmul.getTransposeRhs())
    return "the weight is not read transposed (no transpose_rhs); "
           "loom.linear takes torch's [N, K] layout";
  if (x.getElementType() != w.getElementType() ||
      y.getElementType() != x.getElementType())
    return "the operands and result differ in element type";
  return "";
}

Epilogue LinearFuser::collectEpilogue(MatmulOp matmul) {
  Epilogue ep;
  Block *block = matmul->getBlock();
  auto product = cast<RankedTensorType>(matmul.getType());
  Value current = matmul.getResult();
  auto take = [&](Operation *op) {
    ep.ops.push_back(op);
    current = op->getResult(0);
  };

  Operation *user = soleUser(current, block);
  if (Value other = otherAddend(user, current);
      other && isBias(other, product)) {
    ep.bias = other;
    take(user);
    user = soleUser(current, block);
  }
  if (isa_and_nonnull<ReluOp>(user)) {
    ep.activation = Activation::relu;
    take(user);
    user = soleUser(current, block);
  } else if (isa_and_nonnull<GeluOp>(user)) {
    ep.activation = Activation::gelu;
    take(user);
    user = soleUser(current, block);
  }
  if (Value other = otherAddend(user, current);
      other && other.getType() == current.getType()) {
    ep.residual = other;
    take(user);
  }

  // A value read twice ends the epilogue; say so when the next op would
  // have fitted.
  if (remarks && !ep.residual && !current.hasOneUse() &&
      llvm::any_of(current.getUsers(),
                   [&](Operation *op) { return couldExtend(op, current); })) {
    const char *what = ep.ops.empty() ? "the product" : "its last fused value";
    matmul->emitRemark("epilogue stops: ")
        << what << " has "
        << std::distance(current.use_begin(), current.use_end()) << " uses";
  }
  return ep;
}

void LinearFuser::run(MatmulOp matmul) {
  std::string reason = whyNot(matmul);
  if (!reason.empty()) {
    if (remarks)
      matmul->emitRemark("not fused: ") << reason;
    return;
  }
  Epilogue ep = collectEpilogue(matmul);

  // Every operand of the chain is defined before its last op, which is where
  // the fused op goes.
  Operation *last = ep.ops.empty() ? matmul.getOperation() : ep.ops.back();
  SmallVector<Location> locs = {matmul.getLoc()};
  for (Operation *op : ep.ops)
    locs.push_back(op->getLoc());
  OpBuilder b(last);
  auto linear = b.create<LinearOp>(
      b.getFusedLoc(locs), last->getResult(0).getType(), matmul.getLhs(),
      matmul.getRhs(), ep.bias, ep.residual, ep.activation);
  last->getResult(0).replaceAllUsesWith(linear.getResult());
  for (Operation *op : llvm::reverse(ep.ops))
    op->erase();
  matmul->erase();
}

struct LoomFuseLinearPass : loom::impl::LoomFuseLinearBase<LoomFuseLinearPass> {
  using LoomFuseLinearBase::LoomFuseLinearBase;

  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    LinearFuser fuser(remarks);
    // The epilogue ops erased along the way are never matmuls, so the list
    // stays valid.
    for (MatmulOp matmul : matmuls)
      fuser.run(matmul);
  }
};

} // namespace
