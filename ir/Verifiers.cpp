//===- Verifiers.cpp - Verifiers of ops whose result type is free ---------===//
//
// Ops whose result element type is the user's choice (casts, one-hot, masks,
// positions) cannot infer their type; these verifiers check the shape part.
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "ir/ShapeUtils.h"

using namespace mlir;
using namespace loom;

static bool isFloatTensor(Type t) {
  return isa<FloatType>(cast<ShapedType>(t).getElementType());
}

LogicalResult CastOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyCompatibleShape(in.getShape(), out.getShape())) ||
      in.getRank() != out.getRank())
    return emitOpError("changes the shape from ")
           << formatShape(in.getShape()) << " to "
           << formatShape(out.getShape()) << "; a cast keeps the shape";
  return success();
}

LogicalResult IotaOp::verify() {
  auto like = cast<RankedTensorType>(getLike().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t dim = getDim();
  if (dim < 0 || dim >= like.getRank())
    return emitOpError("dim ") << dim << " is out of range for a rank-"
                               << like.getRank() << " tensor";
  if (out.getRank() != 1 || out.getDimSize(0) != like.getDimSize(dim))
    return emitOpError("result must be [")
           << formatShape(like.getDimSize(dim)) << "], got "
           << formatShape(out.getShape());
  if (out.getElementType().isInteger(1))
    return emitOpError("result element type cannot be i1");
  return success();
}

LogicalResult CausalMaskOp::verify() {
  auto like = cast<RankedTensorType>(getLike().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t dim = getDim();
  if (dim < 0 || dim >= like.getRank())
    return emitOpError("dim ") << dim << " is out of range for a rank-"
                               << like.getRank() << " tensor";
  int64_t n = like.getDimSize(dim);
  if (out.getRank() != 2 || out.getDimSize(0) != n || out.getDimSize(1) != n)
    return emitOpError("result must be [")
           << formatShape({n, n}) << "], got " << formatShape(out.getShape());
  return success();
}

LogicalResult PaddingMaskOp::verify() {
  auto ids = cast<RankedTensorType>(getIds().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (ids.getRank() != 2)
    return emitOpError("ids must be [batch, length], got ")
           << formatShape(ids.getShape());
  SmallVector<int64_t> expected = {ids.getDimSize(0), 1, 1, ids.getDimSize(1)};
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be [")
           << formatShape(expected) << "], got " << formatShape(out.getShape());
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ValueRange operands, DictionaryAttr,
                                            OpaqueProperties, RegionRange,
                                            SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, operands.getTypes());
  return success();
}

Operation *AllReduceOp::waitPoint() {
  Block *block = (*this)->getBlock();
  Operation *first = block->getTerminator();
  for (Value r : getResults())
    for (Operation *user : r.getUsers())
      if (Operation *inBlock = block->findAncestorOpInBlock(*user))
        if (inBlock->isBeforeInBlock(first))
          first = inBlock;
  return first;
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one tensor");
  for (auto [i, in, out] :
       llvm::enumerate(getInputs().getTypes(), getResults().getTypes()))
    if (in != out)
      return emitOpError("result #")
             << i << " must have its operand's type " << in << ", got " << out;
  return success();
}

LogicalResult OneHotOp::verify() {
  auto ids = cast<RankedTensorType>(getIds().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (getDepth() <= 0)
    return emitOpError("depth must be positive, got ") << getDepth();
  SmallVector<int64_t> expected = llvm::to_vector(ids.getShape());
  expected.push_back(getDepth());
  if (out.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("result must be [")
           << formatShape(expected) << "], got " << formatShape(out.getShape());
  if (!isFloatTensor(out))
    return emitOpError("result must be a float tensor");
  return success();
}
