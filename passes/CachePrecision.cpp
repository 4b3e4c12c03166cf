//===- CachePrecision.cpp - A decoder's caches held in bf16 ---------------===//
//
// A decode step reads every key and value its sentences have: the
// cross-attention caches of the source and the self-attention caches of the
// positions so far, each read once per step. Held in bf16 they are half the
// bytes to read, append, gather and keep (once they outgrow the CPU's caches,
// attention over them is bound by those bytes); the products with the f32
// queries and the weighted sums of the values are still formed and summed in
// f32 (loom.attention takes bf16 k and v with an f32 q).
//
// Runs on the decoding entry points after loom-attention-key-layout (so that
// attention reads the self-attention caches where they lie) and before
// elementwise fusion (so that each cast joins the kernel of its producer):
//
//   func @encode(...) -> (tensor<?x8x?x64xf32> {loom.output = "cross_k.0"})
//     return %k
//   func @decode_step(%ck: tensor<?x8x?x64xf32> {loom.input = "cross_k.0"},
//                     %sk: tensor<?x?x?x8x64xf32> {loom.input = "self_k.0"})
//     %new = loom.expand_dims %k1 [0]
//     %cat = loom.concat %sk, %new {dim = 0}
//     %o, %l = loom.attention %q, %cat, %cat_v {keys_position_major}
//     %o2, %l2 = loom.attention %q2, %ck, %cv
//     return ..., %cat
//   ==>
//   func @encode(...) -> (tensor<?x8x?x64xbf16> {loom.output = "cross_k.0"})
//     %k16 = loom.cast %k : ... to tensor<?x8x?x64xbf16>
//     return %k16
//   func @decode_step(%ck: tensor<?x8x?x64xbf16> ..., %sk: tensor<...xbf16>)
//     %new = loom.expand_dims %k1 [0]
//     %new16 = loom.cast %new : ... to tensor<1x?x?x8x64xbf16>
//     %cat = loom.concat %sk, %new16 {dim = 0} : ... -> tensor<...xbf16>
//     ...
//
// A cache is one of the ABI's (abi/ModelAbi.h): an output of @encode named
// cross_*, an input of @decode_step, @decode_step_logits or
// @decode_step_align named cross_* or self_*, and the output a self_* input
// is appended into. @decode_step_align also reads its cross caches where it
// rebuilds the attention weights it returns; those readers get the narrowed
// cache cast back to f32, what the fused attention reads. The runtime's
// drivers give the self-attention caches the cross caches' element type, so
// the pass narrows every cache or none. It declines (with `remarks`, saying
// why) when a cache is read by anything but attention's k or v, the
// concat that appends a position to it, or an op that reads only its shape (a
// CUDA executable's caches go through transposes first: its attention kernel
// reads f32), or when a cache is not f32. Training entries are not touched.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"

#include "abi/ModelAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace loom {
#define GEN_PASS_DEF_LOOMCACHEPRECISION
#include "passes/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// Whether `name` (an ABI name) is a decoder cache's.
bool isCacheName(StringRef name) {
  return name.starts_with(abi::kCrossPrefix) ||
         name.starts_with(abi::kSelfPrefix);
}

/// Whether `use` reads its value as an attention's keys or values.
bool readAsKeys(OpOperand &use) {
  auto attention = dyn_cast<AttentionOp>(use.getOwner());
  return attention &&
         (&use == &attention.getKMutable() || &use == &attention.getVMutable());
}

/// What the pass changes in one decoding entry point.
struct EntryPlan {
  func::FuncOp fn;
  SmallVector<unsigned> args;    // cache inputs
  SmallVector<unsigned> results; // cache outputs (@encode's cross_*)
  SmallVector<ConcatOp> appends; // a self cache with its new position
  /// @decode_step_align's other readers of a cross cache (the scores its
  /// alignment weights are rebuilt from): they read it widened back to f32.
  SmallVector<OpOperand *> widened;
};

struct LoomCachePrecisionPass
    : loom::impl::LoomCachePrecisionBase<LoomCachePrecisionPass> {
  using LoomCachePrecisionBase::LoomCachePrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision != "bf16") {
      module.emitError("loom-cache-precision: unknown precision '")
          << precision << "' (bf16)";
      return signalPassFailure();
    }
    narrow = BFloat16Type::get(&getContext());
    SmallVector<EntryPlan, 4> plans;
    for (const char *name : {abi::kEncode, abi::kDecodeStep,
                             abi::kDecodeStepLogits, abi::kDecodeStepAlign}) {
      auto fn = module.lookupSymbol<func::FuncOp>(name);
      if (!fn || fn.isExternal())
        continue;
      FailureOr<EntryPlan> plan = planEntry(fn);
      if (failed(plan))
        return; // declined: every cache stays f32
      plans.push_back(*plan);
    }
    for (EntryPlan &plan : plans)
      rewrite(plan);
  }

private:
  /// Says why the caches stay f32 (with `remarks`) and fails.
  FailureOr<EntryPlan> decline(Operation *at, const Twine &why) {
    if (remarks)
      at->emitRemark("the decoder's caches stay f32: ") << why;
    return failure();
  }

  /// The caches of `fn`, checked: each is f32 and read only where a bf16
  /// cache can be.
  FailureOr<EntryPlan> planEntry(func::FuncOp fn) {
    EntryPlan plan;
    plan.fn = fn;
    auto notF32 = [](Type t) { return !getElementTypeOrSelf(t).isF32(); };
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto name = fn.getResultAttrOfType<StringAttr>(i, "loom.output");
      if (!name || !isCacheName(name.getValue()))
        continue;
      if (notF32(fn.getResultTypes()[i]))
        return decline(fn, "output '" + name.getValue() + "' is not f32");
      if (fn.getSymName() == abi::kEncode)
        plan.results.push_back(i);
    }
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto name = fn.getArgAttrOfType<StringAttr>(i, "loom.input");
      if (!name || !isCacheName(name.getValue()))
        continue;
      BlockArgument arg = fn.getArgument(i);
      if (notF32(arg.getType()))
        return decline(fn, "input '" + name.getValue() + "' is not f32");
      bool self = name.getValue().starts_with(abi::kSelfPrefix);
      for (OpOperand &use : arg.getUses()) {
        if (readAsKeys(use))
          continue;
        auto concat = dyn_cast<ConcatOp>(use.getOwner());
        if (self && concat && concat.getDim() == 0 &&
            concat->getNumOperands() == 2 && use.getOperandNumber() == 0) {
          if (Operation *reader = appendedReader(concat))
            return decline(reader, "input '" + name.getValue() +
                                       "' with a position appended is read "
                                       "by " +
                                       reader->getName().getStringRef() +
                                       ", which is not attention's keys");
          plan.appends.push_back(concat);
          continue;
        }
        // The alignment entry's weights read the cross keys outside the
        // fused op too; they read what the attention reads, widened.
        if (!self && fn.getSymName() == abi::kDecodeStepAlign) {
          plan.widened.push_back(&use);
          continue;
        }
        return decline(use.getOwner(),
                       "input '" + name.getValue() + "' is read by " +
                           use.getOwner()->getName().getStringRef() +
                           ", which is not attention's keys");
      }
      plan.args.push_back(i);
    }
    // What is narrowed must be narrowed together: an attention's k and v,
    // and a self cache's input and output.
    llvm::SmallPtrSet<Value, 16> narrowed;
    for (unsigned i : plan.args)
      narrowed.insert(fn.getArgument(i));
    for (ConcatOp concat : plan.appends)
      narrowed.insert(concat.getResult());
    for (Value v : narrowed)
      for (Operation *user : v.getUsers())
        if (auto attention = dyn_cast<AttentionOp>(user))
          if (!narrowed.contains(attention.getK()) ||
              !narrowed.contains(attention.getV()))
            return decline(attention, "it reads a cache as keys and another "
                                      "tensor as values");
    if (fn.getSymName() != abi::kEncode) {
      auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
      for (unsigned i = 0; i < fn.getNumResults(); ++i) {
        auto name = fn.getResultAttrOfType<StringAttr>(i, "loom.output");
        if (name && isCacheName(name.getValue()) &&
            !narrowed.contains(ret.getOperand(i)))
          return decline(ret, "output '" + name.getValue() +
                                  "' is not an input cache with a position "
                                  "appended");
      }
    }
    return plan;
  }

  /// A self cache with one position appended must be read only as keys and
  /// returned (as the cache the next step reads): the first reader that is
  /// neither, or null.
  Operation *appendedReader(ConcatOp concat) {
    for (OpOperand &use : concat->getUses())
      if (!readAsKeys(use) && !isa<func::ReturnOp>(use.getOwner()) &&
          !readsShapeOnly(use))
        return use.getOwner();
    return nullptr;
  }

  /// A loom.iota reads its operand's shape, whatever its element type (the
  /// step's positions, which mask those a sentence does not own).
  static bool readsShapeOnly(OpOperand &use) {
    return isa<IotaOp>(use.getOwner());
  }

  RankedTensorType narrowType(Type t) const {
    return cast<RankedTensorType>(t).clone(narrow);
  }

  void rewrite(EntryPlan &plan) {
    func::FuncOp fn = plan.fn;
    Block &body = fn.getBody().front();
    for (unsigned i : plan.args)
      body.getArgument(i).setType(narrowType(body.getArgument(i).getType()));
    OpBuilder b(&getContext());
    for (OpOperand *use : plan.widened) {
      Value cache = use->get();
      b.setInsertionPoint(use->getOwner());
      auto wide = cast<RankedTensorType>(cache.getType())
                      .clone(Float32Type::get(&getContext()));
      use->set(b.create<CastOp>(cache.getLoc(), wide, cache));
    }
    for (ConcatOp concat : plan.appends) {
      // The new position's cast right after it is made, so that elementwise
      // fusion puts it in its producer's kernel where it can.
      Value position = concat->getOperand(1);
      if (Operation *def = position.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPoint(concat);
      Value rounded = b.create<CastOp>(
          concat.getLoc(), narrowType(position.getType()), position);
      concat->setOperand(1, rounded);
      concat.getResult().setType(narrowType(concat.getResult().getType()));
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    for (unsigned i : plan.results) {
      Value v = ret.getOperand(i);
      ret.setOperand(i,
                     b.create<CastOp>(v.getLoc(), narrowType(v.getType()), v));
    }
    fn.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                 ret.getOperandTypes()));
  }

  Type narrow;
};

} // namespace
