//===- Gradients.cpp - Gradient rules (placeholder) -----------------------===//

#include "ir/LoomDialect.h"

using namespace mlir;
using namespace loom;

LogicalResult AddOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SubOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult MulOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult DivOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult MaximumOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult MinimumOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult PowOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult NegOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult AbsOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ExpOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult LogOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SqrtOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult RsqrtOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult TanhOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReluOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult GeluOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ErfOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SinOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult CosOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SelectOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult CastOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult MatmulOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult DropoutOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ReshapeAsOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ExpandDimsOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult TransposeOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SliceOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SliceGradOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ConcatOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult BroadcastAsOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult SumToOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult GatherOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

LogicalResult ScatterAddOp::buildGradients(OpBuilder &, ValueRange,
                                  SmallVectorImpl<Value> &) {
  return emitOpError("has no gradient rule yet");
}

