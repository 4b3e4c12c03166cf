//===- ShapeGradients.cpp - Gradients of shape and data-movement ops ------===//
//
// Each data-movement op's gradient is its adjoint: reshape undoes itself,
// transpose inverts its permutation, slice pairs with slice_grad, broadcast_as
// with sum_to and gather with scatter_add. Operands that only lend their
// shape (`like`) and integer operands (ids) get no gradient.
//
//===----------------------------------------------------------------------===//

#include "ir/GradientUtils.h"
#include "ir/ShapeUtils.h"

using namespace mlir;
using namespace loom;

/// The gradient of an op that only rearranges `input`'s elements into a
/// differently shaped result: the result's gradient reshaped back.
static void pushReshapedBack(OpBuilder &b, Location loc, Value g, Value input,
                             SmallVectorImpl<Value> &operandGrads) {
  if (!isFloatTensor(input)) {
    operandGrads.push_back(Value());
    return;
  }
  operandGrads.push_back(b.create<ReshapeAsOp>(loc, g, input));
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  pushReshapedBack(b, getLoc(), resultGrads[0], getInput(), operandGrads);
  return success();
}

LogicalResult
ReshapeAsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  pushReshapedBack(b, getLoc(), resultGrads[0], getInput(), operandGrads);
  operandGrads.push_back(Value()); // like
  return success();
}

LogicalResult
ExpandDimsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  pushReshapedBack(b, getLoc(), resultGrads[0], getInput(), operandGrads);
  return success();
}

LogicalResult
TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  if (!isFloatTensor(getInput())) {
    operandGrads.push_back(Value());
    return success();
  }
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(
      b.create<TransposeOp>(getLoc(), resultGrads[0], inverse));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  if (!isFloatTensor(getInput())) {
    operandGrads.push_back(Value());
    return success();
  }
  operandGrads.push_back(b.create<SliceGradOp>(getLoc(), resultGrads[0],
                                               getInput(), getDimAttr(),
                                               getStartAttr(), getEndAttr()));
  return success();
}

LogicalResult
SliceGradOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value slice = b.create<SliceOp>(loc, resultGrads[0], getDimAttr(),
                                  getStartAttr(), getEndAttr());
  // With a dynamic `like` the slice's inferred extent may be dynamic where
  // the input's is static; sum_to restores the input's exact type.
  operandGrads.push_back(sumToOperand(b, loc, slice, getInput()));
  operandGrads.push_back(Value()); // like
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  ValueRange inputs = getInputs();
  if (!isFloatTensor(inputs[0])) {
    operandGrads.append(inputs.size(), Value());
    return success();
  }
  int64_t dim = getDim();
  auto sizeOf = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(dim);
  };
  // Each input's gradient is a slice of the result's. Slice bounds are
  // static, so an input is located either by the static sizes before it
  // (counting from the start) or by those after it (counting from the end,
  // where `end = 0` means the end itself).
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t before = 0, after = 0;
    bool beforeStatic = true, afterStatic = true;
    for (size_t j = 0; j < inputs.size(); ++j) {
      int64_t size = sizeOf(inputs[j]);
      bool dynamic = ShapedType::isDynamic(size);
      if (j < i) {
        beforeStatic &= !dynamic;
        before += dynamic ? 0 : size;
      } else if (j > i) {
        afterStatic &= !dynamic;
        after += dynamic ? 0 : size;
      }
    }
    int64_t size = sizeOf(inputs[i]);
    if (size == 0) {
      // An empty slice cannot be named: `end = 0` would mean the end.
      operandGrads.push_back(zerosLike(b, loc, inputs[i]));
      continue;
    }
    int64_t start, end;
    if (beforeStatic && !ShapedType::isDynamic(size)) {
      start = before;
      end = before + size;
    } else if (afterStatic && !ShapedType::isDynamic(size)) {
      start = -(after + size);
      end = -after;
    } else if (beforeStatic && afterStatic) {
      start = before;
      end = -after;
    } else {
      return emitOpError("cannot differentiate input ")
             << i << ": its position along dim " << dim
             << " depends on dynamic sizes on both sides";
    }
    Value slice =
        b.create<SliceOp>(loc, resultGrads[0], b.getI64IntegerAttr(dim),
                          b.getI64IntegerAttr(start), b.getI64IntegerAttr(end));
    operandGrads.push_back(sumToOperand(b, loc, slice, inputs[i]));
  }
  return success();
}

LogicalResult
BroadcastAsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  if (!isFloatTensor(getInput()))
    operandGrads.push_back(Value());
  else
    operandGrads.push_back(
        sumToOperand(b, getLoc(), resultGrads[0], getInput()));
  operandGrads.push_back(Value()); // like
  return success();
}

LogicalResult SumToOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value g = resultGrads[0];
  operandGrads.push_back(
      g.getType() == getInput().getType()
          ? g
          : b.create<BroadcastAsOp>(getLoc(), g, getInput()).getResult());
  operandGrads.push_back(Value()); // like
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      b.create<ScatterAddOp>(getLoc(), resultGrads[0], getIds(), getTable()));
  operandGrads.push_back(Value()); // ids
  return success();
}

LogicalResult
ScatterAddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value rows = b.create<GatherOp>(loc, resultGrads[0], getIds());
  operandGrads.push_back(sumToOperand(b, loc, rows, getUpdates()));
  operandGrads.push_back(Value()); // ids
  operandGrads.push_back(Value()); // like
  return success();
}
