//===- loom-opt.cpp - MLIR's opt driver with Loom's dialect and passes ----===//
//
// Parses loom IR, runs any of Loom's passes (or MLIR's own), prints the result.
// Takes every flag of mlir-opt: --mlir-print-ir-after-all,
// --mlir-print-ir-tree-dir, --verify-diagnostics, --split-input-file, ...
//
// --loom-lower-regions-cpu shows CPU codegen: the module becomes the kernels
// of its loom.fusion regions in the LLVM dialect, as they go into the shared
// object of a compiled model.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/RegionCodegen.h"
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace {

/// Replaces the module by the CPU kernels of its loom.fusion regions.
struct LowerRegionsCpuPass
    : public mlir::PassWrapper<LowerRegionsCpuPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerRegionsCpuPass)

  llvm::StringRef getArgument() const final { return "loom-lower-regions-cpu"; }
  llvm::StringRef getDescription() const final {
    return "Replace the module by the CPU kernels of its loom.fusion "
           "regions, in the LLVM dialect";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                    mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                    mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  }
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    loom::CpuRegionCodegen codegen(&getContext());
    llvm::SmallVector<loom::FusionOp> fusions;
    module.walk([&](loom::FusionOp op) { fusions.push_back(op); });
    for (loom::FusionOp op : fusions)
      if (mlir::failed(codegen.addRegion(op)))
        return signalPassFailure();
    auto lowered = codegen.lowerToLLVMDialect();
    if (mlir::failed(lowered))
      return signalPassFailure();
    mlir::Block *body = module.getBody();
    while (!body->empty())
      body->front().erase();
    body->getOperations().splice(body->end(),
                                 (*lowered)->getBody()->getOperations());
  }
};

} // namespace

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // Every dialect loom-opt can print is one it parses back: the CPU
  // lowering's output is LLVM, arith, math, scf, cf and vector IR.
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
  loom::registerLoomPasses();
  loom::registerCompilePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::PassRegistration<LowerRegionsCpuPass>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
