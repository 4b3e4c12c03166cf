//===- InterpreterFusion.cpp - loom.fusion regions ------------------------===//
//
// A region runs as a small function: its block's arguments are the fusion's
// operands, its ops run one at a time through `evaluateOp` and each result is
// rounded as the enclosing function rounds it, so a fused module computes
// bit for bit what the unfused one computed. A backend's generated kernel is
// held against this op-by-op reading.
//
//===----------------------------------------------------------------------===//

#include "ir/InterpreterFused.h"
#include "ir/InterpreterKernels.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace loom;
using namespace loom::interp;

namespace {

/// A value of the region: an input (borrowed) or an op's result (owned until
/// its last use, so a long region does not keep every temporary alive).
struct Slot {
  HostTensor owned;
  const HostTensor *ptr = nullptr;
  Operation *lastUser = nullptr;
};

} // namespace

llvm::Expected<Results> interp::evaluateFusion(FusionOp op, Operands operands,
                                               Callee &callee, bool f64) {
  Block &body = op.getBody().front();
  if (operands.size() != body.getNumArguments())
    return kernelError("has " + llvm::Twine(operands.size()) +
                       " operands but its block takes " +
                       llvm::Twine(body.getNumArguments()) + " arguments");

  // Number every value up front: slots never move once results point into
  // them.
  llvm::DenseMap<Value, unsigned> slotOf;
  for (BlockArgument arg : body.getArguments())
    slotOf[arg] = slotOf.size();
  for (Operation &inner : body)
    for (Value r : inner.getResults())
      slotOf[r] = slotOf.size();
  std::vector<Slot> slots(slotOf.size());
  for (Operation &inner : body)
    for (Value v : inner.getOperands()) {
      auto it = slotOf.find(v);
      if (it == slotOf.end())
        return opError(&inner, "uses a value the region does not define");
      slots[it->second].lastUser = &inner;
    }
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (llvm::Error err =
            checkFits(*operands[i], arg.getType(), "input #" + llvm::Twine(i)))
      return std::move(err);
    slots[i].ptr = operands[i];
  }

  std::vector<const HostTensor *> args;
  for (Operation &inner : body) {
    args.clear();
    for (Value v : inner.getOperands()) {
      const HostTensor *t = slots[slotOf.lookup(v)].ptr;
      if (!t)
        return opError(&inner, "uses a value before it is defined");
      args.push_back(t);
    }

    if (isa<YieldOp>(inner)) {
      Results results;
      for (const HostTensor *t : args)
        results.push_back(*t);
      return results;
    }

    auto results = evaluateOp(&inner, args, callee);
    if (!results)
      return results.takeError();
    if (results->size() != inner.getNumResults())
      return opError(&inner, "produced " + llvm::Twine(results->size()) +
                                 " results, expected " +
                                 llvm::Twine(inner.getNumResults()));
    for (auto [r, t] : llvm::zip(inner.getResults(), *results)) {
      if (llvm::Error err = checkFits(t, r.getType(), "the result"))
        return opError(&inner, llvm::toString(std::move(err)));
      if (!f64)
        roundInPlace(t);
      Slot &slot = slots[slotOf.lookup(r)];
      if (!slot.lastUser)
        continue; // Nothing reads it.
      slot.owned = std::move(t);
      slot.ptr = &slot.owned;
    }

    // Free the results this op was the last to read.
    for (Value v : inner.getOperands()) {
      Slot &slot = slots[slotOf.lookup(v)];
      if (slot.lastUser == &inner && slot.ptr == &slot.owned) {
        slot.owned = HostTensor();
        slot.ptr = nullptr;
      }
    }
  }
  return kernelError("the region ends without loom.yield");
}
