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
#include "codegen/cuda/CudaRegionCodegen.h"
#include "ir/LoomDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Debug/Counter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"

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

/// Replaces the module by the CUDA kernels of its loom.fusion regions (a
/// gpu.module); with `ptx-file`, also writes their PTX for `chip` there.
struct LowerRegionsCudaPass
    : public mlir::PassWrapper<LowerRegionsCudaPass,
                               mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerRegionsCudaPass)

  LowerRegionsCudaPass() = default;
  LowerRegionsCudaPass(const LowerRegionsCudaPass &other)
      : PassWrapper(other) {}

  llvm::StringRef getArgument() const final {
    return "loom-lower-regions-cuda";
  }
  llvm::StringRef getDescription() const final {
    return "Replace the module by the CUDA kernels of its loom.fusion "
           "regions (a gpu.module); optionally write their PTX";
  }
  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::gpu::GPUDialect, mlir::arith::ArithDialect,
                    mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect,
                    mlir::math::MathDialect, mlir::scf::SCFDialect>();
  }
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    loom::cuda::CudaRegionCodegen codegen(&getContext());
    llvm::SmallVector<loom::FusionOp> fusions;
    module.walk([&](loom::FusionOp op) { fusions.push_back(op); });
    for (loom::FusionOp op : fusions)
      if (mlir::failed(codegen.addRegion(op)))
        return signalPassFailure();
    if (!ptxFile.empty()) {
      std::string error;
      loom::cuda::PtxOptions options;
      options.chip = chip;
      mlir::FailureOr<std::string> ptx = codegen.emitPtx(options, error);
      if (mlir::failed(ptx)) {
        module.emitError(error);
        return signalPassFailure();
      }
      std::error_code ec;
      llvm::raw_fd_ostream out(ptxFile, ec);
      if (ec) {
        module.emitError("cannot write '" + ptxFile + "': " + ec.message());
        return signalPassFailure();
      }
      out << *ptx;
    }
    mlir::Block *body = module.getBody();
    while (!body->empty())
      body->front().erase();
    body->getOperations().splice(body->end(),
                                 codegen.module().getBody()->getOperations());
    module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                    mlir::UnitAttr::get(&getContext()));
  }

  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("NVIDIA architecture of the PTX"),
                           llvm::cl::init("sm_90")};
  Option<std::string> ptxFile{*this, "ptx-file",
                              llvm::cl::desc("Write the kernels' PTX here")};
};

/// Prints `message` (LLVM's "tool: text" lines, or a bare text) as an
/// error: "loom-opt: error: text", then any further lines as they are.
void printError(llvm::StringRef message) {
  // Some of LLVM's parse errors go straight to stderr, before this.
  if (message.trim().empty())
    message = "invalid command line; see 'loom-opt --help'";
  auto [first, rest] = message.trim().split('\n');
  first.consume_front("loom-opt: ");
  llvm::errs() << "loom-opt: error: " << first << "\n";
  if (!rest.empty())
    llvm::errs() << rest << "\n";
}

} // namespace

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // Every dialect loom-opt can print is one it parses back: the CPU
  // lowering's output is LLVM, arith, math, scf, cf and vector IR, the CUDA
  // lowering's also gpu.
  registry.insert<loom::LoomDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect,
                  mlir::gpu::GPUDialect>();
  loom::registerLoomPasses();
  loom::registerCompilePipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::PassRegistration<LowerRegionsCpuPass>();
  mlir::PassRegistration<LowerRegionsCudaPass>();

  // What mlir::registerAndParseCLIOptions does, except that the parse
  // reports to us: LLVM's parser and MLIR's driver print a bad flag or an
  // input that cannot be opened without saying that it is an error.
  static llvm::cl::opt<std::string> inputFilename(
      llvm::cl::Positional, llvm::cl::desc("<input file>"),
      llvm::cl::init("-"));
  static llvm::cl::opt<std::string> outputFilename(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  std::string header = "Loom optimizer driver\nAvailable Dialects: ";
  llvm::raw_string_ostream headerStream(header);
  llvm::interleaveComma(registry.getDialectNames(), headerStream);
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, headerStream.str(),
                                         &parseErrorStream)) {
    printError(parseErrorStream.str());
    return 1;
  }
  std::string openError;
  if (inputFilename != "-" && !mlir::openInputFile(inputFilename, &openError)) {
    printError(openError);
    return 1;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
