//===- LoomDialect.h - The loom dialect -------------------------*- C++ -*-===//
//
// The public header of Loom's dialect: the dialect, its enums, the gradient
// interface and every op.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_IR_LOOMDIALECT_H
#define LOOM_IR_LOOMDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace loom::OpTrait {
/// Loom_ElementwiseMap in LoomOps.td: a marker, checked with
/// `op->hasTrait<loom::OpTrait::ElementwiseMap>()`.
template <typename ConcreteType>
class ElementwiseMap
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseMap> {};

/// Loom_ViewOfOperand in LoomOps.td: the result is the first operand's
/// bytes in another shape; checked with
/// `op->hasTrait<loom::OpTrait::ViewOfOperand>()`.
template <typename ConcreteType>
class ViewOfOperand
    : public mlir::OpTrait::TraitBase<ConcreteType, ViewOfOperand> {};

/// Loom_MovesElements in LoomOps.td: each result element is an element of
/// the first operand, moved; checked with
/// `op->hasTrait<loom::OpTrait::MovesElements>()`.
template <typename ConcreteType>
class MovesElements
    : public mlir::OpTrait::TraitBase<ConcreteType, MovesElements> {};
} // namespace loom::OpTrait

#include "ir/LoomDialect.h.inc"
#include "ir/LoomEnums.h.inc"
#include "ir/LoomInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ir/LoomOps.h.inc"

namespace loom {

/// Whether a product of `operand` elements may have `result` elements (both
/// element types): the same type, or f32 summing bf16 or f16 products (see
/// ProductOpInterface).
bool isProductResultType(mlir::Type operand, mlir::Type result);

/// The additive value that masks a position out of attention. Finite, so a
/// fully masked row gives a uniform distribution instead of NaNs.
constexpr double kMaskedScore = -1e9;
/// loom.attention_grad recomputes a row's lse from its scores when the given
/// one is this large in magnitude (a row whose every key is masked, near
/// kMaskedScore): there a float's spacing is 1/8 or more, so exp(S - lse)
/// would not give the probabilities back.
constexpr double kCoarseLse = double(1 << 20);

/// Attribute names that tie function arguments and results to the outside
/// world: checkpoints, inputs, optimizer state and named outputs.
constexpr const char *kParamAttr = "loom.param";
constexpr const char *kInputAttr = "loom.input";
constexpr const char *kOptStateAttr = "loom.opt_state";
constexpr const char *kOutputAttr = "loom.output";
/// A unit attribute on a function whose single scalar result is a loss that
/// `loom-autodiff` differentiates.
constexpr const char *kDifferentiableAttr = "loom.differentiable";
/// A unit attribute on the op computing the count the loss is a mean over
/// (a scalar: the batch's real target tokens). `loom-data-parallel` turns
/// the mean over one rank's tokens into the mean over every rank's.
constexpr const char *kTokenCountAttr = "loom.token_count";

} // namespace loom

#endif // LOOM_IR_LOOMDIALECT_H
