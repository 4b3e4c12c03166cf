//===- RegionCodegen.h - loom.fusion regions to native code -----*- C++ -*-===//
//
// Every loom.fusion region becomes one C function in a shared object:
//
//   extern "C" void <symbol>(void *const *args, const int64_t *dims,
//                            int64_t rowBegin, int64_t rowEnd);
//
// `args[i]` points at the first element of the region's i-th operand, then
// (after the operands) of its i-th result; every tensor is dense row-major
// (i1 as one byte per element). `dims` holds the sizes of each operand then
// each result, in that order, rank(type) entries each (nothing for rank 0).
// The iteration domain is the broadcast of all operand and result shapes
// (rank R = the largest of their ranks, right-aligned, a size-1 dim
// broadcasts); its rows are the first R - 1 dims flattened, its columns the
// last dim (a rank-0 domain is one row of one column). One call computes
// rows [rowBegin, rowEnd); the runtime splits rows over threads when the
// kernel is `parallel` (a region that reduces across rows is not, and is
// called once with all rows). A result may share its storage with an
// operand of the same shape: the kernel reads every element of a row it
// needs before it writes that row's results.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CODEGEN_CPU_REGIONCODEGEN_H
#define LOOM_CODEGEN_CPU_REGIONCODEGEN_H

#include "codegen/cpu/ObjectEmitter.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <string>
#include <vector>

namespace loom {

struct RegionKernel {
  std::string symbol;
  bool parallel = true; // rows may be split over threads
};

/// Collects the kernels of one executable and compiles them together.
class CpuRegionCodegen {
public:
  /// Kernels for `target`: its vector width, and its CPU when compiled.
  explicit CpuRegionCodegen(
      mlir::MLIRContext *context,
      const cpu::CodegenTarget &target = cpu::hostTarget());
  ~CpuRegionCodegen();

  /// Adds the kernel for `fusion` (structurally identical regions with the
  /// same operand and result types share one kernel). On failure an error on
  /// `fusion` names the op in its body that cannot be compiled.
  mlir::FailureOr<RegionKernel> addRegion(FusionOp fusion);

  /// The kernels so far, lowered to the LLVM dialect, for dumps and tests.
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> lowerToLLVMDialect();

  /// Compiles every added kernel for the target at -O3 and links them into
  /// one shared object; returns the object's bytes, or failure with an error
  /// message in `error`.
  mlir::FailureOr<std::string> emitSharedObject(std::string &error);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace loom

#endif // LOOM_CODEGEN_CPU_REGIONCODEGEN_H
