//===- PtxEmitter.cpp - GPU kernels to PTX through MLIR's NVVM path -------===//

#include "codegen/cuda/PtxEmitter.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>

using namespace mlir;

std::string loom::cuda::libdevicePath() {
#ifdef LOOM_CUDA_LIBDEVICE
  return LOOM_CUDA_LIBDEVICE;
#else
  return "";
#endif
}

std::string loom::cuda::ptxasPath() {
#ifdef LOOM_PTXAS
  return LOOM_PTXAS;
#else
  return "";
#endif
}

FailureOr<std::string> loom::cuda::assemblePtx(StringRef ptx, StringRef chip,
                                               std::string &error) {
  std::string ptxas = ptxasPath();
  if (ptxas.empty() || !llvm::sys::fs::can_execute(ptxas)) {
    error = "no ptxas (" +
            (ptxas.empty() ? std::string("this build found no CUDA toolkit")
                           : "'" + ptxas + "' cannot be run") +
            ")";
    return failure();
  }
  // ptxas reads and writes files: three temporaries, removed on return.
  SmallString<128> input, output, log;
  // A deque: FileRemover copies delete too, so the removers must not move.
  std::deque<llvm::FileRemover> removers;
  for (auto [path, suffix] :
       {std::pair{&input, "ptx"}, std::pair{&output, "cubin"},
        std::pair{&log, "log"}}) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("loom-ptxas", suffix, *path)) {
      error = "cannot create a temporary file: " + ec.message();
      return failure();
    }
    removers.emplace_back(*path);
  }
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(input, ec);
    out << ptx;
    if (ec || out.has_error()) {
      error = "cannot write '" + input.str().str() + "' for ptxas";
      return failure();
    }
  }
  std::string arch = "-arch=" + chip.str();
  SmallVector<StringRef> args = {ptxas,       arch, "-O3",
                                 input.str(), "-o", output.str()};
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string runError;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                     /*secondsToWait=*/0, /*memoryLimit=*/0,
                                     &runError);
  if (rc != 0) {
    auto message = llvm::MemoryBuffer::getFile(log);
    error = "ptxas for " + chip.str() + " failed" +
            (rc < 0    ? ": " + runError
             : message ? ": " + (*message)->getBuffer().trim().str()
                       : std::string());
    return failure();
  }
  auto cubin = llvm::MemoryBuffer::getFile(output, /*IsText=*/false);
  if (!cubin) {
    error = "cannot read ptxas's output: " + cubin.getError().message();
    return failure();
  }
  return (*cubin)->getBuffer().str();
}

FailureOr<std::string> loom::cuda::emitPtx(ModuleOp module, StringRef kernels,
                                           const PtxOptions &options,
                                           std::string &error) {
  std::string libdevice = libdevicePath();
  if (libdevice.empty() || !llvm::sys::fs::exists(libdevice)) {
    error = "no libdevice (" +
            (libdevice.empty() ? std::string("this build found no CUDA toolkit")
                               : "'" + libdevice + "' is missing") +
            "): PTX needs the CUDA toolkit's nvvm/libdevice/libdevice.10.bc";
    return failure();
  }
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(*ctx);
  registerBuiltinDialectTranslation(*ctx);
  registerGPUDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerNVVMDialectTranslation(*ctx);

  OwningOpRef<ModuleOp> clone = module.clone();
  auto gpuModule = clone->lookupSymbol<gpu::GPUModuleOp>(kernels);
  if (!gpuModule) {
    error = "no gpu.module @" + kernels.str();
    return failure();
  }
  Builder b(ctx);
  (*clone)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
  auto target = NVVM::NVVMTargetAttr::getChecked(
      [&] { return gpuModule.emitError(); }, ctx, /*optLevel=*/3,
      StringRef("nvptx64-nvidia-cuda"), StringRef(options.chip),
      StringRef(options.features), DictionaryAttr(),
      b.getStrArrayAttr({libdevice}));
  if (!target) {
    error = "bad NVVM target chip '" + options.chip + "' or features '" +
            options.features + "'";
    return failure();
  }
  gpuModule.setTargetsAttr(b.getArrayAttr({target}));

  PassManager pm(ctx);
  pm.addPass(createConvertSCFToCFPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX text, not a cubin
  pm.addPass(createGpuModuleToBinaryPass(binary));
  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
      return success();
    });
    if (failed(pm.run(*clone))) {
      error = "PTX for " + options.chip + " failed: " +
              (diagnostics.empty() ? "the NVVM pipeline failed" : diagnostics);
      return failure();
    }
  }
  auto binaryOp = clone->lookupSymbol<gpu::BinaryOp>(kernels);
  if (!binaryOp || binaryOp.getObjects().size() != 1) {
    error = "the NVVM pipeline made no object for @" + kernels.str();
    return failure();
  }
  auto object = cast<gpu::ObjectAttr>(binaryOp.getObjects()[0]);
  // The NVVM target ends the PTX with a NUL for the driver's JIT, which
  // ptxas reads as text after the end.
  return object.getObject().getValue().rtrim('\0').str();
}
