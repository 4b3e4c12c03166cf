//===- GradientUtils.cpp - Helpers shared by the gradient rules -----------===//

#include "ir/GradientUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>

using namespace mlir;

namespace loom {

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool isFloatTensor(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  return shaped && isa<FloatType>(shaped.getElementType());
}

Value scalarConstant(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute scalar =
      isa<FloatType>(element)
          ? Attribute(b.getFloatAttr(element, value))
          : Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, scalar));
}

Value scalarLike(OpBuilder &b, Location loc, Value like, double value) {
  return scalarConstant(b, loc, elementTypeOf(like), value);
}

Value zerosLike(OpBuilder &b, Location loc, Value like) {
  return b.create<BroadcastAsOp>(loc, scalarLike(b, loc, like, 0.0), like);
}

Value sumToOperand(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (grad.getType() == operand.getType())
    return grad;
  return b.create<SumToOp>(loc, grad, operand);
}

Value restoreReducedDims(OpBuilder &b, Location loc, Value reduced,
                         ArrayRef<int64_t> dims, bool keepDims) {
  // A rank-0 value broadcasts as it is; others need their size-1 dims back.
  if (keepDims || dims.empty() ||
      cast<ShapedType>(reduced.getType()).getRank() == 0)
    return reduced;
  SmallVector<int64_t> sorted(dims);
  std::sort(sorted.begin(), sorted.end());
  return b.create<ExpandDimsOp>(loc, reduced, sorted);
}

Value unreduce(OpBuilder &b, Location loc, Value reduced, Value input,
               ArrayRef<int64_t> dims, bool keepDims) {
  reduced = restoreReducedDims(b, loc, reduced, dims, keepDims);
  if (reduced.getType() == input.getType())
    return reduced;
  return b.create<BroadcastAsOp>(loc, reduced, input);
}

} // namespace loom
