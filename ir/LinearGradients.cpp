//===- LinearGradients.cpp - Gradients of linear, add_layer_norm ----------===//

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

LogicalResult LinearOp::buildGradients(OpBuilder &, ValueRange,
                                       SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult AddLayerNormOp::buildGradients(OpBuilder &, ValueRange,
                                             SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}
