//===- DataParallel.cpp - Gradients averaged across ranks -----------------===//
//
// The gradient function of one rank becomes that of a data-parallel job:
//
//   func @loss_grad(%w {loom.param = "w"}, %src, %tgt) -> (loss, grad.w) {
//     %c = loom.reduce_sum %real [0, 1] {loom.token_count}   // forward
//     %l = loom.div %sum, %cmax
//     ...                                                    // backward
//     %gw = ...
//     return %l, %gw
//   }
//   ==>
//     %c = loom.reduce_sum %real [0, 1] {loom.token_count}
//     %local = loom.maximum %c, 1.0
//     %l = loom.div %sum, %cmax
//     %ls = loom.mul %l, %local
//     %C, %L = loom.all_reduce %c, %ls          // where the loss is known
//     ...
//     %gw = ...
//     %gs = loom.mul %gw, %local
//     %R = loom.all_reduce %gs                  // right after %gw's producer
//     ...
//     %total = loom.maximum %C, 1.0
//     return loom.div %L, %total, loom.div %R, %total
//
// Each rank's loss is a sum over its tokens divided by max(c, 1), so
// multiplying by max(c, 1) gives the sum back (0 on a rank of padding
// alone) and dividing the sums by max(C, 1) gives the mean over every
// rank's tokens: what one process computes on the whole global batch.
//
// Buckets are filled in the order the backward pass completes gradients
// (the position of each one's producer), about `bucket-bytes` each; a
// bucket's all-reduce stands right after its last producer, so a runtime
// that starts it there and waits where the results are used (before the
// optimizer) overlaps sending it with the rest of the backward pass.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "abi/ModelAbi.h"

#include "mlir/IR/Builders.h"

namespace loom {
#define GEN_PASS_DEF_LOOMDATAPARALLEL
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The op after which `v` is available: its producer, or null for a block
/// argument (available from the start).
Operation *producerIn(Block &body, Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return nullptr;
  return body.findAncestorOpInBlock(*op);
}

/// Whether availability point `a` comes before `b` (null: the start).
bool before(Operation *a, Operation *b) {
  if (!a)
    return b != nullptr;
  return b && a->isBeforeInBlock(b);
}

Operation *later(Operation *a, Operation *b) { return before(a, b) ? b : a; }

/// Sets `builder` to insert right after availability point `at`.
void insertAfter(OpBuilder &builder, Block &body, Operation *at) {
  if (at)
    builder.setInsertionPointAfter(at);
  else
    builder.setInsertionPointToStart(&body);
}

Value scalar(OpBuilder &b, Location loc, Type element, double v) {
  auto type = RankedTensorType::get({}, element);
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(
               type, ArrayRef<Attribute>{FloatAttr::get(element, v)}));
}

/// `v` in `element`, casting when it differs.
Value as(OpBuilder &b, Location loc, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return b.create<CastOp>(loc, type.clone(element), v);
}

struct LoomDataParallelPass
    : loom::impl::LoomDataParallelBase<LoomDataParallelPass> {
  using LoomDataParallelBase::LoomDataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes <= 0) {
      module.emitError("loom-data-parallel: bucket-bytes must be positive, "
                       "got ")
          << int64_t(bucketBytes);
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>(gradFunction);
    if (!fn) {
      module.emitError("loom-data-parallel: no function @")
          << gradFunction << " (run loom-autodiff first)";
      return signalPassFailure();
    }
    if (failed(distribute(fn)))
      signalPassFailure();
  }

private:
  LogicalResult distribute(func::FuncOp fn);
};

struct Gradient {
  unsigned result;  // index among the function's results
  Operation *ready; // its producer in the body (null: an argument)
  int64_t bytes;
};

LogicalResult LoomDataParallelPass::distribute(func::FuncOp fn) {
  if (fn.getBody().getBlocks().size() != 1)
    return fn.emitError("loom-data-parallel: @")
           << fn.getSymName() << " must have one block";
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (!body.getOps<AllReduceOp>().empty())
    return fn.emitError("loom-data-parallel: @")
           << fn.getSymName() << " already has all-reduces";

  // The loss and the gradients, by their loom.output names.
  std::optional<unsigned> lossIndex;
  SmallVector<Gradient> grads;
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    auto name = fn.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    if (!name)
      continue;
    Value v = ret.getOperand(i);
    if (name.getValue() == abi::kLossOutput) {
      lossIndex = i;
      continue;
    }
    if (!name.getValue().starts_with(abi::kGradPrefix))
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.hasStaticShape())
      return fn.emitError("loom-data-parallel: ")
             << name << " has a dynamic shape " << type
             << "; buckets are sized from static gradient shapes";
    int64_t bytes = type.getNumElements() *
                    (type.getElementType().getIntOrFloatBitWidth() / 8);
    grads.push_back({i, producerIn(body, v), bytes});
  }
  if (!lossIndex)
    return fn.emitError("loom-data-parallel: @")
           << fn.getSymName() << " has no result named '" << abi::kLossOutput
           << "'";
  if (grads.empty())
    return fn.emitError("loom-data-parallel: @")
           << fn.getSymName() << " returns no gradient";

  // The rank's token count: the op marked loom.token_count, or 1.
  Operation *countOp = nullptr;
  WalkResult walk = fn.walk([&](Operation *op) {
    if (!op->hasAttr(kTokenCountAttr))
      return WalkResult::advance();
    if (countOp) {
      op->emitError("loom-data-parallel: a second op marked ")
          << kTokenCountAttr;
      return WalkResult::interrupt();
    }
    countOp = op;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  Value loss = ret.getOperand(*lossIndex);
  auto lossType = cast<RankedTensorType>(loss.getType());
  if (lossType.getRank() != 0)
    return fn.emitError("loom-data-parallel: the loss must be a scalar, got ")
           << lossType;
  Type element = lossType.getElementType();
  Location loc = fn.getLoc();
  OpBuilder b(fn.getContext());

  Value count;
  Operation *countReady = nullptr;
  if (countOp) {
    if (countOp->getNumResults() != 1 ||
        cast<RankedTensorType>(countOp->getResult(0).getType()).getRank() != 0)
      return countOp->emitError("loom-data-parallel: the op marked ")
             << kTokenCountAttr << " must have one scalar result";
    countReady = body.findAncestorOpInBlock(*countOp);
    insertAfter(b, body, countReady);
    count = as(b, loc, countOp->getResult(0), element);
    if (count.getDefiningOp() != countOp) // a cast to the loss's type
      countReady = count.getDefiningOp();
  } else {
    b.setInsertionPointToStart(&body);
    count = scalar(b, loc, element, 1.0);
    countReady = count.getDefiningOp();
  }
  insertAfter(b, body, countReady);
  Value local = b.create<MaximumOp>(loc, count, scalar(b, loc, element, 1.0));
  Operation *localReady = local.getDefiningOp();

  // The count and the loss's sum, in one all-reduce where both are known.
  insertAfter(b, body, later(localReady, producerIn(body, loss)));
  Value lossSum = b.create<MulOp>(loc, loss, local);
  auto totals = b.create<AllReduceOp>(loc, ValueRange{count, lossSum});
  totals->setAttr("loom.bucket", b.getStringAttr("loss"));

  // Gradients in the order the backward pass completes them.
  llvm::stable_sort(grads, [](const Gradient &x, const Gradient &y) {
    return before(x.ready, y.ready);
  });
  SmallVector<Value> reduced(fn.getNumResults());
  int64_t bucketIndex = 0;
  for (size_t first = 0; first < grads.size();) {
    size_t last = first;
    int64_t bytes = 0;
    while (last < grads.size() && bytes < bucketBytes)
      bytes += grads[last++].bytes;
    Operation *ready = localReady;
    for (size_t k = first; k < last; ++k)
      ready = later(ready, grads[k].ready);
    insertAfter(b, body, ready);
    SmallVector<Value> scaled;
    for (size_t k = first; k < last; ++k) {
      Value g = ret.getOperand(grads[k].result);
      Type gElement = cast<RankedTensorType>(g.getType()).getElementType();
      scaled.push_back(b.create<MulOp>(loc, g, as(b, loc, local, gElement)));
    }
    auto bucket = b.create<AllReduceOp>(loc, scaled);
    bucket->setAttr("loom.bucket",
                    b.getStringAttr("grads " + std::to_string(bucketIndex++) +
                                    ", " + std::to_string(bytes) + " bytes"));
    for (size_t k = first; k < last; ++k)
      reduced[grads[k].result] = bucket.getResult(k - first);
    first = last;
  }

  // The means, where they are returned: elementwise work that fuses with
  // the optimizer's.
  b.setInsertionPoint(ret);
  Value total = b.create<MaximumOp>(loc, totals.getResult(0),
                                    scalar(b, loc, element, 1.0));
  ret.setOperand(*lossIndex, b.create<DivOp>(loc, totals.getResult(1), total));
  for (const Gradient &g : grads) {
    Value sum = reduced[g.result];
    Type gElement = cast<RankedTensorType>(sum.getType()).getElementType();
    ret.setOperand(g.result,
                   b.create<DivOp>(loc, sum, as(b, loc, total, gElement)));
  }
  return success();
}

} // namespace
