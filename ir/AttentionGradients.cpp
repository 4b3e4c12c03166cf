//===- AttentionGradients.cpp - Gradient of loom.attention (placeholder) --===//

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

LogicalResult AttentionOp::buildGradients(OpBuilder &, ValueRange,
                                          SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}
