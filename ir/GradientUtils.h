//===- GradientUtils.h - Helpers shared by the gradient rules ---*- C++ -*-===//
//
// The small vocabulary every gradient rule is written in: scalar constants of
// an operand's element type, zeros shaped like a value, and undoing an
// operand's broadcast. Rules build only loom ops, so the gradient code goes
// through the same passes and backends as the forward code.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_GRADIENTUTILS_H
#define LOOM_IR_GRADIENTUTILS_H

#include "ir/LoomDialect.h"

#include "mlir/IR/Builders.h"

namespace loom {

/// The element type of a tensor value.
mlir::Type elementTypeOf(mlir::Value v);

/// Whether `v` is a tensor of floating-point elements: only those carry
/// gradients.
bool isFloatTensor(mlir::Value v);

/// A rank-0 `loom.constant` of `element` type holding `value`; broadcasting
/// makes it usable against any shape.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type element, double value);

/// A scalar constant of `like`'s element type.
mlir::Value scalarLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like,
                       double value);

/// Zeros with the type of `like` (`broadcast_as` of a 0 constant, so dynamic
/// dims follow `like` at run time).
mlir::Value zerosLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Value like);

/// Gives `grad` exactly the type of `operand`: the gradient of a broadcast
/// operand is summed back down to its shape with `loom.sum_to`. A gradient
/// that already has the operand's type is returned as it is.
mlir::Value sumToOperand(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value grad, mlir::Value operand);

/// Re-inserts the reduced `dims` of a reduction's result as size-1 dims when
/// the reduction dropped them, so that the result broadcasts against the
/// reduction's input (a rank-0 result is returned as it is).
mlir::Value restoreReducedDims(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value reduced,
                               llvm::ArrayRef<int64_t> dims, bool keepDims);

/// Re-inserts the reduced `dims` of a reduction's result as size-1 dims (when
/// the reduction dropped them) and broadcasts it back onto `input`.
mlir::Value unreduce(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value reduced, mlir::Value input,
                     llvm::ArrayRef<int64_t> dims, bool keepDims);

/// The gradients of layer normalization over the last dim,
/// `y = (x - mean) * rsqrt(var + epsilon) * gamma + beta`, for the result
/// gradient `g`. The row statistics are recomputed from `x`. Shared by
/// loom.layer_norm and loom.add_layer_norm (whose `x` is its sum).
struct LayerNormGradients {
  mlir::Value input, gamma, beta;
};
LayerNormGradients buildLayerNormGradients(mlir::OpBuilder &b,
                                           mlir::Location loc, mlir::Value g,
                                           mlir::Value x, mlir::Value gamma,
                                           mlir::Value beta, double epsilon);

} // namespace loom

#endif // LOOM_IR_GRADIENTUTILS_H
