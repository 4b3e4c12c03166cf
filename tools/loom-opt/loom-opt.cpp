//===- loom-opt.cpp - MLIR's opt driver with Loom's dialect and passes ----===//
//
// Parses loom IR, runs any of Loom's passes (or MLIR's own), prints the result.
// Takes every flag of mlir-opt: --mlir-print-ir-after-all,
// --mlir-print-ir-tree-dir, --verify-diagnostics, --split-input-file, ...
//
//===----------------------------------------------------------------------===//

#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect>();
  loom::registerLoomPasses();
  loom::registerCompilePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
