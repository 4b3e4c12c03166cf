//===- AttentionCalls.cpp - loom.attention as a library call --------------===//
//
// loom.attention and loom.attention_grad run as the library kernels
// "attention" and "attention_grad" (runtime/cpu/AttentionKernels.cpp) with
// the attributes of abi::AttentionCall (abi/LibraryCalls.h has the layout).
// The kernels compute in f32; the forward also reads bf16 keys and values
// (a decoder's caches held narrow), which it widens as it reads them.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/LibraryCalls.h"

#include "ir/LoomDialect.h"

#include <type_traits>

using namespace mlir;
using namespace loom;

namespace {

template <typename OpTy>
FailureOr<LibraryCall> encode(OpTy op, const char *kernel) {
  for (Value v : op->getOperands()) {
    Type element = cast<ShapedType>(v.getType()).getElementType();
    if (v == op.getSeed())
      continue;
    bool narrowKeys = std::is_same_v<OpTy, AttentionOp> && element.isBF16() &&
                      (v == op.getK() || v == op.getV());
    if (!element.isF32() && !narrowKeys)
      return op->emitOpError("runs in f32 (with bf16 keys and values in the "
                             "forward) only, got ")
             << v.getType();
  }
  LibraryCall call;
  call.kernel = kernel;
  call.args.assign(op->operand_begin(), op->operand_end());
  call.args.insert(call.args.end(), op->result_begin(), op->result_end());
  loom::abi::AttentionCall attrs;
  attrs.hasMask = bool(op.getMask());
  attrs.hasSeed = bool(op.getSeed());
  attrs.causal = op.getCausal();
  attrs.dropoutOffset = op.getDropoutOffset();
  attrs.scale = op.getScale().convertToDouble();
  attrs.dropoutRate = op.getDropoutRate().convertToDouble();
  if constexpr (std::is_same_v<OpTy, AttentionOp>)
    attrs.keysPositionMajor = op.getKeysPositionMajor();
  call.attrs = attrs.encode();
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
