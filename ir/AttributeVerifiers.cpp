//===- AttributeVerifiers.cpp - Float attributes within their ranges ------===//
//
// An op's float attributes say how it computes (a layer norm's epsilon,
// a dropout rate, an attention's scale); a NaN or an out-of-range value
// would turn every result into NaN or a probability past 1, silently. The
// fused ops' verifiers refuse them with these, the attribute and its value
// named (the shape inference of layer_norm, dropout and cross_entropy
// checks theirs the same way).
//
//===----------------------------------------------------------------------===//

#include "ir/AttributeVerifiers.h"

#include <cmath>

using namespace mlir;

namespace loom {

LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (std::isfinite(epsilon) && epsilon >= 0)
    return success();
  return op->emitOpError("epsilon must be a finite number, 0 or more, got ")
         << epsilon;
}

LogicalResult verifyRate(Operation *op, StringRef name, double rate) {
  if (rate >= 0 && rate < 1)
    return success();
  return op->emitOpError() << name << " must be in [0, 1), got " << rate;
}

LogicalResult verifyScale(Operation *op, double scale) {
  if (std::isfinite(scale))
    return success();
  return op->emitOpError("scale must be a finite number, got ") << scale;
}

} // namespace loom
