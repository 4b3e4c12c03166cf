//===- ShapeUtils.h - Shapes shared by inference and rules ------*- C++ -*-===//

#ifndef LOOM_IR_SHAPEUTILS_H
#define LOOM_IR_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace loom {

/// Prints a shape as `2x?x3` (`scalar` for rank 0), for error messages.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The NumPy broadcast of two shapes. A dynamic dim against a static one
/// other than 1 takes the static size; against 1 it stays dynamic. Returns
/// std::nullopt when two static sizes differ and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Normalizes a possibly negative index `i` into [0, rank); nullopt if out of
/// range.
std::optional<int64_t> normalizeAxis(int64_t i, int64_t rank);

/// The builtin ranked tensor type with `shape` and `element`.
inline mlir::RankedTensorType tensorOf(llvm::ArrayRef<int64_t> shape,
                                       mlir::Type element) {
  return mlir::RankedTensorType::get(shape, element);
}

} // namespace loom

#endif // LOOM_IR_SHAPEUTILS_H
