//===- LibraryCalls.cpp - Ops that run as runtime library kernels ---------===//
//
// Every top-level op of a planned function other than loom.fusion (generated
// code) and loom.constant (data) becomes a call of a library kernel. The
// tensor arguments are always the op's present operands in order, then its
// results; what the kernel cannot see from the tensors travels as the
// attributes of the kernel's struct in abi/LibraryCalls.h, which documents
// their layout. reshape, reshape_as and expand_dims run as "copy"; every
// other op runs as the kernel of its own name.
//
// A view (reshape, reshape_as, expand_dims, a contiguous slice) that the
// memory plan placed on its operand's bytes needs no call; the executable
// writer leaves it out, and a copy whose operand and result coincide does
// nothing anyway.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/LibraryCalls.h"

#include "ir/LoomDialect.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace loom;

namespace {

int64_t i64(uint64_t attr) { return static_cast<int64_t>(attr); }

/// A call of `kernel` on the op's operands and results.
LibraryCall callOf(Operation *op, const char *kernel,
                   loom::abi::CallAttrs attrs = {}) {
  LibraryCall call;
  call.kernel = kernel;
  for (Value v : op->getOperands())
    call.args.push_back(v);
  for (Value v : op->getResults())
    call.args.push_back(v);
  call.attrs = std::move(attrs);
  return call;
}

/// The dialect's activation as the calling convention spells it. A switch
/// rather than a cast, so that an activation added to the dialect is a
/// compile warning here instead of a call every kernel refuses.
loom::abi::Activation activationOf(Activation activation) {
  switch (activation) {
  case Activation::none:
    return loom::abi::Activation::None;
  case Activation::relu:
    return loom::abi::Activation::Relu;
  case Activation::gelu:
    return loom::abi::Activation::Gelu;
  }
  llvm_unreachable("unknown activation");
}

} // namespace

FailureOr<LibraryCall> loom::encodeLibraryCall(Operation *op) {
  using R = FailureOr<LibraryCall>;
  // A view the memory plan could not place on its operand's storage is a
  // copy.
  if (op->hasTrait<loom::OpTrait::ViewOfOperand>())
    return callOf(op, "copy");
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case<AttentionOp, AttentionGradOp>(
          [](Operation *op) { return encodeAttentionCall(op); })
      .Case<LinearOp>([](LinearOp o) -> R {
        abi::LinearCall linear;
        linear.hasBias = bool(o.getBias());
        linear.hasResidual = bool(o.getResidual());
        linear.activation = activationOf(o.getActivation());
        return callOf(o, "linear", linear.encode());
      })
      .Case<MatmulOp>([](MatmulOp o) -> R {
        abi::MatmulCall matmul;
        matmul.transposeLhs = o.getTransposeLhs();
        matmul.transposeRhs = o.getTransposeRhs();
        return callOf(o, "matmul", matmul.encode());
      })
      .Case<TransposeOp>([](TransposeOp o) -> R {
        ArrayRef<int64_t> perm = o.getPerm();
        return callOf(o, "transpose",
                      abi::TransposeCall{{perm.begin(), perm.end()}}.encode());
      })
      .Case<SliceOp>([](SliceOp o) -> R {
        abi::SliceCall slice{i64(o.getDim()), i64(o.getStart()),
                             i64(o.getEnd())};
        return callOf(o, "slice", slice.encode());
      })
      .Case<SliceGradOp>([](SliceGradOp o) -> R {
        abi::SliceCall slice{i64(o.getDim()), i64(o.getStart()),
                             i64(o.getEnd())};
        return callOf(o, "slice_grad", slice.encode());
      })
      .Case<ConcatOp>([](ConcatOp o) -> R {
        return callOf(o, "concat", abi::ConcatCall{i64(o.getDim())}.encode());
      })
      .Case<BroadcastAsOp>(
          [](BroadcastAsOp o) -> R { return callOf(o, "broadcast_as"); })
      .Case<SumToOp>([](SumToOp o) -> R { return callOf(o, "sum_to"); })
      .Case<GatherOp>([](GatherOp o) -> R { return callOf(o, "gather"); })
      .Case<ScatterAddOp>(
          [](ScatterAddOp o) -> R { return callOf(o, "scatter_add"); })
      .Case<OneHotOp>([](OneHotOp o) -> R {
        return callOf(o, "one_hot",
                      abi::OneHotCall{i64(o.getDepth())}.encode());
      })
      .Case<PaddingMaskOp>([](PaddingMaskOp o) -> R {
        return callOf(o, "padding_mask",
                      abi::PaddingMaskCall{i64(o.getPad())}.encode());
      })
      .Case<CausalMaskOp>([](CausalMaskOp o) -> R {
        return callOf(o, "causal_mask",
                      abi::AxisCall{i64(o.getDim())}.encode());
      })
      .Case<IotaOp>([](IotaOp o) -> R {
        return callOf(o, "iota", abi::AxisCall{i64(o.getDim())}.encode());
      })
      .Case<CrossEntropyOp>([](CrossEntropyOp o) -> R {
        abi::CrossEntropyCall loss{i64(o.getIgnoreIndex()),
                                   o.getLabelSmoothing().convertToDouble()};
        return callOf(o, "cross_entropy", loss.encode());
      })
      .Case<CrossEntropyGradOp>([](CrossEntropyGradOp o) -> R {
        abi::CrossEntropyCall loss{i64(o.getIgnoreIndex()),
                                   o.getLabelSmoothing().convertToDouble()};
        return callOf(o, "cross_entropy_grad", loss.encode());
      })
      .Default([](Operation *op) -> R {
        return op->emitError("no CPU library kernel for ")
               << op->getName()
               << (isa<FusionOp>(op) ? " (a loom.fusion is generated code)"
                                     : "");
      });
}
