//===- LibraryCalls.cpp - Ops that run as runtime library kernels ---------===//
//
// Every top-level op of a planned function other than loom.fusion (generated
// code) and loom.constant (data) becomes a call of a kernel of
// runtime/cpu/Kernels.h. The tensor arguments are always the op's present
// operands in order, then its results; what the kernel cannot see from the
// tensors' shapes travels in `ints` and `floats`, laid out as follows (the
// kernels read exactly this):
//
//   op                        kernel              ints                  floats
//   ------------------------  ------------------  --------------------  ------
//   linear                    linear              [hasBias, hasResidual,
//                                                  activation]          -
//   matmul                    matmul              [transposeLhs,
//                                                  transposeRhs]        -
//   reshape, reshape_as,      copy                -                     -
//     expand_dims
//   transpose                 transpose           perm                  -
//   slice                     slice               [dim, start, end]     -
//   slice_grad                slice_grad          [dim, start, end]     -
//   concat                    concat              [dim]                 -
//   broadcast_as              broadcast_as        -                     -
//   sum_to                    sum_to              -                     -
//   gather                    gather              -                     -
//   scatter_add               scatter_add         -                     -
//   one_hot                   one_hot             [depth]               -
//   padding_mask              padding_mask        [pad]                 -
//   causal_mask               causal_mask         [dim]                 -
//   iota                      iota                [dim]                 -
//   cross_entropy             cross_entropy       [ignoreIndex]         [eps]
//   cross_entropy_grad        cross_entropy_grad  [ignoreIndex]         [eps]
//   attention, attention_grad (AttentionCalls.cpp)
//
// activation is 0 none, 1 relu, 2 gelu (the values of loom::Activation);
// flags are 0 or 1; eps is the label smoothing. slice's start and end are
// the attributes as written (negative counts from the end, an end <= 0 from
// the end), resolved by the kernel against the run-time dim. linear's
// optional bias and residual are among the tensors only when present, so
// its tensors are [x, weight, bias?, residual?, result].
//
// A view (reshape, reshape_as, expand_dims, a contiguous slice) that the
// memory plan placed on its operand's bytes needs no call; the executable
// writer leaves it out, and a copy whose operand and result coincide does
// nothing anyway.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LibraryCalls.h"

#include "ir/LoomDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace loom;

namespace {

int64_t i64(uint64_t attr) { return static_cast<int64_t>(attr); }

/// A call of `kernel` on the op's operands and results.
LibraryCall callOf(Operation *op, const char *kernel,
                   std::vector<int64_t> ints = {},
                   std::vector<double> floats = {}) {
  LibraryCall call;
  call.kernel = kernel;
  for (Value v : op->getOperands())
    call.args.push_back(v);
  for (Value v : op->getResults())
    call.args.push_back(v);
  call.ints = std::move(ints);
  call.floats = std::move(floats);
  return call;
}

} // namespace

FailureOr<LibraryCall> loom::encodeLibraryCall(Operation *op) {
  using R = FailureOr<LibraryCall>;
  return llvm::TypeSwitch<Operation *, R>(op)
      .Case<AttentionOp, AttentionGradOp>(
          [](Operation *op) { return encodeAttentionCall(op); })
      .Case<LinearOp>([](LinearOp o) -> R {
        return callOf(o, "linear",
                      {o.getBias() ? 1 : 0, o.getResidual() ? 1 : 0,
                       static_cast<int64_t>(o.getActivation())});
      })
      .Case<MatmulOp>([](MatmulOp o) -> R {
        return callOf(
            o, "matmul",
            {o.getTransposeLhs() ? 1 : 0, o.getTransposeRhs() ? 1 : 0});
      })
      .Case<ReshapeOp, ReshapeAsOp, ExpandDimsOp>(
          [](Operation *op) -> R { return callOf(op, "copy"); })
      .Case<TransposeOp>([](TransposeOp o) -> R {
        ArrayRef<int64_t> perm = o.getPerm();
        return callOf(o, "transpose", {perm.begin(), perm.end()});
      })
      .Case<SliceOp>([](SliceOp o) -> R {
        return callOf(o, "slice",
                      {i64(o.getDim()), i64(o.getStart()), i64(o.getEnd())});
      })
      .Case<SliceGradOp>([](SliceGradOp o) -> R {
        return callOf(o, "slice_grad",
                      {i64(o.getDim()), i64(o.getStart()), i64(o.getEnd())});
      })
      .Case<ConcatOp>([](ConcatOp o) -> R {
        return callOf(o, "concat", {i64(o.getDim())});
      })
      .Case<BroadcastAsOp>(
          [](BroadcastAsOp o) -> R { return callOf(o, "broadcast_as"); })
      .Case<SumToOp>([](SumToOp o) -> R { return callOf(o, "sum_to"); })
      .Case<GatherOp>([](GatherOp o) -> R { return callOf(o, "gather"); })
      .Case<ScatterAddOp>(
          [](ScatterAddOp o) -> R { return callOf(o, "scatter_add"); })
      .Case<OneHotOp>([](OneHotOp o) -> R {
        return callOf(o, "one_hot", {i64(o.getDepth())});
      })
      .Case<PaddingMaskOp>([](PaddingMaskOp o) -> R {
        return callOf(o, "padding_mask", {i64(o.getPad())});
      })
      .Case<CausalMaskOp>([](CausalMaskOp o) -> R {
        return callOf(o, "causal_mask", {i64(o.getDim())});
      })
      .Case<IotaOp>(
          [](IotaOp o) -> R { return callOf(o, "iota", {i64(o.getDim())}); })
      .Case<CrossEntropyOp>([](CrossEntropyOp o) -> R {
        return callOf(o, "cross_entropy", {i64(o.getIgnoreIndex())},
                      {o.getLabelSmoothing().convertToDouble()});
      })
      .Case<CrossEntropyGradOp>([](CrossEntropyGradOp o) -> R {
        return callOf(o, "cross_entropy_grad", {i64(o.getIgnoreIndex())},
                      {o.getLabelSmoothing().convertToDouble()});
      })
      .Default([](Operation *op) -> R {
        return op->emitError("no CPU library kernel for ")
               << op->getName()
               << (isa<FusionOp>(op) ? " (a loom.fusion is generated code)"
                                     : "");
      });
}
