//===- KernelMath.h - Scalar and vector arithmetic for kernels --*- C++ -*-===//
//
// What one node of a region graph computes, written once for scalars (row
// and global values, the column loop's remainder) and for vectors of
// `lanes` elements (the column loop's body). Floats use the arith and math
// dialects with `contract` (never nnan/ninf: masks are -1e9 and a NaN loss
// must show), so math.exp and friends can become the inline polynomial
// approximations that vectorize; sin, cos and pow call libm per lane, since
// positional encodings need their full range reduction.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_COMMON_KERNELMATH_H
#define LOOM_CODEGEN_COMMON_KERNELMATH_H

#include "codegen/common/RegionGraph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace loom::codegen {

class KernelMath {
public:
  /// `libm`: sin, cos, pow (and f64 erf, tanh) call the C library, whose
  /// range reduction positional encodings need on the CPU; without it (GPU
  /// kernels) they stay math ops, which codegen/common/MathExpansion.h expands.
  KernelMath(mlir::OpBuilder &b, mlir::Location loc, mlir::ModuleOp module,
             bool libm = true)
      : b(b), loc(loc), module(module), libm(libm) {}

  /// `elem`, or a vector of `lanes` of it.
  mlir::Type typeOf(mlir::Type elem, unsigned lanes) const;
  mlir::Value constant(mlir::Type elem, double value, unsigned lanes);
  mlir::Value intConstant(mlir::Type elem, int64_t value, unsigned lanes);
  mlir::Value i64(int64_t value) {
    return intConstant(b.getI64Type(), value, 1);
  }
  /// A scalar as a vector of `lanes` (or itself).
  mlir::Value splat(mlir::Value scalar, unsigned lanes);

  mlir::Value unary(UnaryFn fn, mlir::Value x);
  mlir::Value binary(BinaryFn fn, mlir::Value a, mlir::Value b);
  mlir::Value compare(ComparePredicate p, mlir::Value a, mlir::Value b);
  mlir::Value select(mlir::Value c, mlir::Value a, mlir::Value b);
  mlir::Value cast(mlir::Value x, mlir::Type to);
  /// Inverted dropout of `x` at linear indices `index` (i64, same lanes)
  /// with the site key `key` (scalar i64): keeps exactly the elements the
  /// interpreter keeps.
  mlir::Value dropout(mlir::Value x, mlir::Value key, mlir::Value index,
                      double rate);
  /// The key of a dropout site from its run-time seed and offset (scalar
  /// i64 each).
  mlir::Value dropoutKey(mlir::Value seed, mlir::Value offset);

  /// Loads `lanes` elements of `memoryType` at `ptr[offset]`, converted to
  /// `computeType` (i1 is a byte in memory, f16/bf16 compute in f32).
  mlir::Value load(mlir::Value ptr, mlir::Value offset, mlir::Type memoryType,
                   mlir::Type computeType, unsigned lanes);
  void store(mlir::Value value, mlir::Value ptr, mlir::Value offset,
             mlir::Type memoryType);
  /// The type an element of `memoryType` occupies in memory.
  mlir::Type storageType(mlir::Type memoryType);

  /// The identity of a reduction and one step of it.
  mlir::Value reductionInit(ReduceFn fn, mlir::Type elem, unsigned lanes);
  mlir::Value reductionStep(ReduceFn fn, mlir::Value acc, mlir::Value x);
  /// A vector accumulator folded to a scalar.
  mlir::Value reductionFinish(ReduceFn fn, mlir::Value acc);

  /// The run-time size of `d`: static, or the NumPy broadcast of the
  /// `dims` entries it lists.
  mlir::Value dimValue(const DimExpr &d, llvm::ArrayRef<mlir::Value> dims);
  /// Per dim of a rank-`rank` iteration domain, the element stride of a
  /// dense tensor of `shape` (right-aligned), or null where the tensor
  /// broadcasts (a missing or static-1 dim); a dynamic dim that is 1 at run
  /// time gets stride 0.
  llvm::SmallVector<mlir::Value>
  domainStrides(const ShapeExpr &shape, size_t rank,
                llvm::ArrayRef<mlir::Value> dims);

  /// i64 arithmetic for offsets and sizes.
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);

private:
  mlir::Value mix64(mlir::Value x);
  mlir::Value libmCall(llvm::StringRef f32Name, llvm::StringRef f64Name,
                       mlir::ValueRange args);
  mlir::arith::FastMathFlagsAttr fastmath();

  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::ModuleOp module;
  bool libm;
};

} // namespace loom::codegen

#endif // LOOM_CODEGEN_COMMON_KERNELMATH_H
