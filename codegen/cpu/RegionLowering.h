//===- RegionLowering.h - A region graph as a kernel function ---*- C++ -*-===//
//
// The second half of region codegen: a scheduled RegionGraph becomes
//
//   func.func @sym(%args: !llvm.ptr, %dims: !llvm.ptr, %rowBegin: i64,
//                  %rowEnd: i64)
//
// in scf/arith/math/vector with llvm-dialect loads and stores, which lowers
// to a plain C function of the RegionCodegen.h ABI. Per call: sizes and
// strides from `dims`, the global values, then per stage a loop over the
// rows; per row, the row values and one column loop per phase, each an
// explicit vector loop of `lanes` columns and a scalar loop for the rest.
//
// Explicit vectors (rather than scalar loops for LLVM's vectorizer) keep
// in-place kernels fast: a result that shares storage with an operand would
// make the vectorizer's run-time alias check fail and fall back to scalar
// code, while a vector iteration that reads its inputs before it writes its
// outputs is correct for exact overlap as it stands.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_REGIONLOWERING_H
#define LOOM_CODEGEN_CPU_REGIONLOWERING_H

#include "codegen/common/KernelMath.h"
#include "codegen/common/RegionGraph.h"

#include "mlir/IR/BuiltinOps.h"

namespace loom::cpu {

using codegen::KernelMath;
using codegen::RegionGraph;

struct KernelOptions {
  /// Columns per vector iteration (1: scalar loops only).
  unsigned lanes = 8;
  /// sin, cos and pow through the C library (KernelMath); false: as GPU
  /// kernels compute them (codegen/common/MathExpansion.h).
  bool libm = true;
};

/// Adds the kernel of `graph` to `module` as `symbol`. With dropout sites
/// it takes a fifth argument, `const int64_t *offsets` (one per Dropout
/// node, in node order), and is called through emitDropoutWrapper.
void emitKernel(const RegionGraph &graph, mlir::ModuleOp module,
                llvm::StringRef symbol, const KernelOptions &options);

/// Adds `symbol`, of the kernel ABI, which calls `impl` with `offsets`.
void emitDropoutWrapper(mlir::ModuleOp module, llvm::StringRef symbol,
                        llvm::StringRef impl, llvm::ArrayRef<int64_t> offsets);

} // namespace loom::cpu

#endif // LOOM_CODEGEN_CPU_REGIONLOWERING_H
