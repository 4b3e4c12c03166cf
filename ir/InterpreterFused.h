//===- InterpreterFused.h - The interpreter's fused-op kernels --*- C++ -*-===//
//
// Multi-result and region ops of the fusion passes, each in a file of its own
// (InterpreterAttention.cpp, InterpreterLinear.cpp, InterpreterFusion.cpp).
// Each returns one tensor per result, unrounded, like every kernel; errors say
// what was wrong and the caller prefixes the op.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_INTERPRETERFUSED_H
#define LOOM_IR_INTERPRETERFUSED_H

#include "ir/InterpreterOps.h"
#include "ir/LoomDialect.h"

namespace loom::interp {

using Results = std::vector<HostTensor>;
using Operands = llvm::ArrayRef<const HostTensor *>;

llvm::Expected<Results> evaluateAttention(AttentionOp op, Operands operands);
llvm::Expected<Results> evaluateAttentionGrad(AttentionGradOp op,
                                              Operands operands);
llvm::Expected<Results> evaluateLinear(LinearOp op, Operands operands);
llvm::Expected<Results> evaluateAddLayerNorm(AddLayerNormOp op,
                                             Operands operands);
/// Runs the region of `op` on `operands`, op by op, with the same rounding
/// as the enclosing function (`f64` off rounds every result).
llvm::Expected<Results> evaluateFusion(FusionOp op, Operands operands,
                                       Callee &callee, bool f64);

} // namespace loom::interp

#endif // LOOM_IR_INTERPRETERFUSED_H
