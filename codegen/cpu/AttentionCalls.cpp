//===- AttentionCalls.cpp - loom.attention as a library call --------------===//
//
// loom.attention and loom.attention_grad run as the runtime kernels
// "attention" and "attention_grad" (runtime/cpu/AttentionKernels.cpp, which
// documents the same table):
//
//   kernel          args
//   attention       q, k, v, [mask], [seed], out, lse
//   attention_grad  q, k, v, out, lse, dout, [mask], [seed], dq, dk, dv
//
//   ints   = [hasMask, hasSeed, causal, dropout_offset]
//   floats = [scale, dropout_rate]
//
// The flags say which optional operands are present, since the kernel sees
// only a list of tensors. The kernels compute in f32 only.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/LibraryCalls.h"

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

namespace {

template <typename OpTy>
FailureOr<LibraryCall> encode(OpTy op, const char *kernel) {
  for (Value v : op->getOperands()) {
    Type element = cast<ShapedType>(v.getType()).getElementType();
    if (v == op.getSeed())
      continue;
    if (!element.isF32())
      return op->emitOpError("runs on the CPU in f32 only, got ")
             << v.getType();
  }
  LibraryCall call;
  call.kernel = kernel;
  call.args.assign(op->operand_begin(), op->operand_end());
  call.args.insert(call.args.end(), op->result_begin(), op->result_end());
  call.ints = {op.getMask() ? 1 : 0, op.getSeed() ? 1 : 0,
               op.getCausal() ? 1 : 0,
               static_cast<int64_t>(op.getDropoutOffset())};
  call.floats = {op.getScale().convertToDouble(),
                 op.getDropoutRate().convertToDouble()};
  return call;
}

} // namespace

FailureOr<LibraryCall> loom::encodeAttentionCall(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op))
    return encode(attention, "attention");
  if (auto grad = dyn_cast<AttentionGradOp>(op))
    return encode(grad, "attention_grad");
  return op->emitOpError("is not loom.attention or loom.attention_grad");
}
