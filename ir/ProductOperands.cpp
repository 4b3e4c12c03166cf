//===- ProductOperands.cpp - Products of narrow operands with wide sums ---===//
//
// The ops whose operands may be rounded to bf16 or f16 while their sums stay
// f32 (ProductOpInterface): which operands, and the result types they then
// accept. loom.matmul infers its result type from its operands, so the f32
// result of bf16 operands is the one place where its written type may differ
// from the inferred one.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

bool loom::isProductResultType(Type operand, Type result) {
  return operand == result ||
         (isa<BFloat16Type, Float16Type>(operand) && result.isF32());
}

SmallVector<unsigned> MatmulOp::getProductOperands() { return {0, 1}; }

SmallVector<unsigned> LinearOp::getProductOperands() { return {0, 1}; }

bool MatmulOp::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto expected = dyn_cast<RankedTensorType>(inferred[0]);
  auto written = dyn_cast<RankedTensorType>(actual[0]);
  if (!expected || !written)
    return inferred[0] == actual[0];
  return expected.getShape() == written.getShape() &&
         isProductResultType(expected.getElementType(),
                             written.getElementType());
}
