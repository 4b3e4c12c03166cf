//===- MathExpansion.h - Math functions as arithmetic ----------*- C++ -*-===//
//
// Generated kernels that must call nothing (GPU kernels: no libdevice is
// linked) compute math functions with arithmetic alone:
//
//   %y = math.sin %x : f32
//
// becomes, after the argument is reduced to [-pi, pi] with a three-part
// 2*pi (Cody-Waite, fused multiply-adds: accurate for |x| up to about 1e5,
// far past any position times frequency of a sinusoidal encoding),
//
//   %k = math.roundeven (%x * 1/(2pi));  %r = fma(-%k, C3, fma(-%k, C2,
//   fma(-%k, C1, %x)));  %y = <MLIR's polynomial sin of %r>
//
// pow(x, y) becomes exp(y * log(x)) with C's special cases, and exp, log,
// tanh, erf, sin, cos MLIR's polynomial approximations, the ones the CPU's
// kernels use for exp, log, tanh and erf. The CPU's own kernels call the C
// library for sin, cos and pow unless asked not to (CodegenTarget::libm),
// which is how the GPU's math is checked on a machine without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_MATHEXPANSION_H
#define LOOM_CODEGEN_COMMON_MATHEXPANSION_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace loom {

/// Expands the math functions of f32 (scalar or vector) under `root` as
/// the header says; math ops of other types are left to the patterns'
/// own coverage (f64 stays a call where the target has one).
mlir::LogicalResult expandMathFunctions(mlir::Operation *root);

} // namespace loom

#endif // LOOM_CODEGEN_COMMON_MATHEXPANSION_H
