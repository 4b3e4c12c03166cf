//===- InterpreterFusion.cpp - loom.fusion regions (placeholder) ----------===//

#include "ir/InterpreterFused.h"

using namespace loom;
using namespace loom::interp;

llvm::Expected<Results> interp::evaluateFusion(FusionOp, Operands, Callee &,
                                               bool) {
  return llvm::createStringError("loom.fusion is not implemented yet");
}
