//===- MixedPrecision.cpp - bf16 products, f32 sums -----------------------===//
//
// Mixed-precision training as one rewrite of the finished training step, so
// that every target compiles the same graph. Runs after loom-optimizer on the
// training entry points (@loss, @loss_grad, @train_step): the factors of
// every product are rounded to bf16 once, and everything else stays f32.
//
//   %y = loom.linear %x, %w : tensor<?x8xf32>, tensor<4x8xf32>
//          -> tensor<?x4xf32>
//   %d = loom.matmul %g, %w : (tensor<?x4xf32>, tensor<4x8xf32>)
//          -> tensor<?x8xf32>
//   ==>
//   %w16 = loom.cast %w : tensor<4x8xf32> to tensor<4x8xbf16>    // once
//   %x16 = loom.cast %x : tensor<?x8xf32> to tensor<?x8xbf16>
//   %y = loom.linear %x16, %w16 : tensor<?x8xbf16>, tensor<4x8xbf16>
//          -> tensor<?x4xf32>
//   %g16 = loom.cast %g : tensor<?x4xf32> to tensor<?x4xbf16>
//   %d = loom.matmul %g16, %w16 : (tensor<?x4xbf16>, tensor<4x8xbf16>)
//          -> tensor<?x8xf32>
//
// A cast sits right after the value's definition (at the function's entry
// for a parameter), so elementwise fusion puts it in the kernel that made the
// value, and there is one per value: a weight is rounded once per step and
// read in bf16 by its forward product and by the gradient's. A view of a
// value (reshape, expand_dims) views the value's cast, so dW's product over
// the flattened rows reads the same rounded x as the forward's; a slice or a
// transpose (MovesElements) of a value made in the step, that only products
// read, moves the cast of its source, so the move copies half the bytes and
// the cast joins the source's kernel.
//
// What runs in bf16, what stays f32, and why:
//
//   GEMM factors (linear's x and     bf16: the products are nine tenths of a
//   weight, matmul's lhs and rhs,    step's arithmetic; a product of two bf16
//   the gradients' products)         values is exact in f32, so the operands
//                                    lose their low 16 bits and nothing else.
//   GEMM sums and results            f32: a sum over d_model, d_ff or every
//                                    token of a batch (dW) would lose 8 bits
//                                    per doubling of the partial sums.
//   linear's bias, residual and      f32, applied to the f32 sum: the residual
//   activation                       stream carries each layer's small update;
//                                    in bf16 an update under 1/256 of it goes.
//   attention (q k^T, p v)           f32 for now: the CPU kernel reads f32.
//                                    Its max and sum stay f32 in any case.
//   layer-norm statistics            f32: a variance is a mean of squares of
//                                    deviations that bf16 would round away.
//   softmax, log-softmax, the        f32: exponentials of differences and sums
//   cross-entropy and its label-     over the vocabulary.
//   smoothing sums, the loss
//   gradient accumulation, the       f32: Adam's update is 1e-3 to 1e-6 of a
//   master weights, Adam's moments   weight; bf16 (8 bits) would round it away.
//   elementwise ops, dropout,        f32: memory-bound; storing them in bf16
//   gathers, scatter-adds            would halve their bytes at a rounding each
//                                    (a later step, not this pass).
//
// The pass does not fire on operands that are not f32 (already narrow, or
// f64), on operands an op does not list as factors (bias, residual), on ops
// without ProductOpInterface, or in functions outside `entries` (decoding:
// a translator rounds its weights once per session, when it packs them).
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "abi/ModelAbi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"

namespace loom {
#define GEN_PASS_DEF_LOOMMIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct LoomMixedPrecisionPass
    : loom::impl::LoomMixedPrecisionBase<LoomMixedPrecisionPass> {
  using LoomMixedPrecisionBase::LoomMixedPrecisionBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (precision != "bf16") {
      fn.emitError("loom-mixed-precision: unknown precision '")
          << precision << "' (bf16)";
      return signalPassFailure();
    }
    if (!isEntry(fn.getSymName()))
      return;
    narrow = BFloat16Type::get(&getContext());
    narrowed.clear();
    bypassedViews.clear();
    lastEntryCast = nullptr;
    SmallVector<ProductOpInterface> products;
    fn.walk([&](ProductOpInterface op) { products.push_back(op); });
    for (ProductOpInterface op : products)
      for (unsigned index : op.getProductOperands()) {
        Value operand = op->getOperand(index);
        if (getElementTypeOrSelf(operand).isF32())
          op->setOperand(index, narrowOf(operand));
      }
    // An f32 view that only a product read is dead now.
    for (Operation *view : llvm::reverse(bypassedViews))
      if (view->use_empty())
        view->erase();
  }

private:
  bool isEntry(StringRef name) const {
    if (entries.empty())
      return name == abi::kLoss || name == abi::kLossGrad ||
             name == abi::kTrainStep;
    return llvm::is_contained(entries, name.str());
  }

  /// Whether every reader of `v` reads it as a product's factor, or views
  /// it for one.
  static bool readOnlyAsFactors(Value v) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user->hasTrait<loom::OpTrait::ViewOfOperand>() &&
          user->getNumResults() == 1 && use.getOperandNumber() == 0 &&
          readOnlyAsFactors(user->getResult(0)))
        continue;
      auto product = dyn_cast<ProductOpInterface>(user);
      if (!product || !llvm::is_contained(product.getProductOperands(),
                                          use.getOperandNumber()))
        return false;
    }
    return true;
  }

  Type narrowType(Value v) const {
    return cast<RankedTensorType>(v.getType()).clone(narrow);
  }

  /// `v` rounded to the narrow type, made once per value.
  Value narrowOf(Value v) {
    if (Value done = narrowed.lookup(v))
      return done;
    Operation *def = v.getDefiningOp();
    OpBuilder b(&getContext());
    Value result;
    // A view costs nothing, so its source's cast is always viewed; a move
    // (slice, transpose) only when products alone read it, or the f32 move
    // would stay for its other readers beside a bf16 one, and not of a
    // parameter: the memory plan places a parameter's rows (a packed
    // projection's slices) on the parameter, where they cost no copy, and a
    // bf16 copy of the whole weight would then be sliced by copying.
    bool movesCast = def && def->hasTrait<loom::OpTrait::MovesElements>() &&
                     !isa<BlockArgument>(def->getOperand(0)) &&
                     readOnlyAsFactors(v);
    if (def && (def->hasTrait<loom::OpTrait::ViewOfOperand>() || movesCast) &&
        def->getNumResults() == 1 &&
        getElementTypeOrSelf(def->getOperand(0)).isF32()) {
      // The view (or the slice, the transpose) of the source's cast: one
      // rounding per tensor, and a move of half the bytes.
      Value source = narrowOf(def->getOperand(0));
      b.setInsertionPointAfter(def);
      Operation *view = b.clone(*def);
      view->setOperand(0, source);
      view->getResult(0).setType(narrowType(v));
      result = view->getResult(0);
      bypassedViews.push_back(def);
    } else if (def) {
      b.setInsertionPointAfter(def);
      result = b.create<CastOp>(v.getLoc(), narrowType(v), v);
    } else {
      // Arguments' casts open the function, in the order they are needed.
      if (lastEntryCast)
        b.setInsertionPointAfter(lastEntryCast);
      else
        b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
      lastEntryCast = b.create<CastOp>(v.getLoc(), narrowType(v), v);
      result = lastEntryCast->getResult(0);
    }
    narrowed[v] = result;
    return result;
  }

  Type narrow;
  llvm::DenseMap<Value, Value> narrowed;
  SmallVector<Operation *> bypassedViews;
  Operation *lastEntryCast = nullptr;
};

} // namespace
