//===- InterpreterAttention.cpp - Fused attention (placeholder) -----------===//

#include "ir/InterpreterFused.h"

using namespace loom;
using namespace loom::interp;

llvm::Expected<Results> interp::evaluateAttention(AttentionOp, Operands) {
  return llvm::createStringError("loom.attention is not implemented yet");
}

llvm::Expected<Results> interp::evaluateAttentionGrad(AttentionGradOp,
                                                      Operands) {
  return llvm::createStringError("loom.attention_grad is not implemented yet");
}
