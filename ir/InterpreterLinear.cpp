//===- InterpreterLinear.cpp - Linear and add_layer_norm (placeholder) ----===//

#include "ir/InterpreterFused.h"

using namespace loom;
using namespace loom::interp;

llvm::Expected<Results> interp::evaluateLinear(LinearOp, Operands) {
  return llvm::createStringError("loom.linear is not implemented yet");
}

llvm::Expected<Results> interp::evaluateAddLayerNorm(AddLayerNormOp,
                                                     Operands) {
  return llvm::createStringError("loom.add_layer_norm is not implemented yet");
}
