//===- AttributeVerifiers.h - Float attributes in range ---------*- C++ -*-===//
//
// Checks the op verifiers share for float attributes (AttributeVerifiers.cpp
// says why): each emits an error naming the attribute and its value.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_ATTRIBUTEVERIFIERS_H
#define LOOM_IR_ATTRIBUTEVERIFIERS_H

#include "ir/LoomDialect.h"

namespace loom {

/// A layer norm's epsilon: finite, 0 or more.
mlir::LogicalResult verifyEpsilon(mlir::Operation *op, double epsilon);
/// A probability of dropping or smoothing: in [0, 1).
mlir::LogicalResult verifyRate(mlir::Operation *op, llvm::StringRef name,
                               double rate);
/// An attention's score scale: finite.
mlir::LogicalResult verifyScale(mlir::Operation *op, double scale);

} // namespace loom

#endif // LOOM_IR_ATTRIBUTEVERIFIERS_H
