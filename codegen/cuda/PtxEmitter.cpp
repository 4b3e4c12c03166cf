//===- PtxEmitter.cpp - GPU kernels to PTX through MLIR's NVVM path -------===//

#include "codegen/cuda/PtxEmitter.h"
#include "codegen/common/MathExpansion.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <deque>

using namespace mlir;

/// Where a CUDA toolkit file may be, in order: where this build found it,
/// then under $CUDA_HOME, $CUDA_PATH and /usr/local/cuda (an installed loom
/// may run where the toolkit lives elsewhere than where it was built).
static SmallVector<std::string> toolkitFiles(StringRef builtIn,
                                             StringRef relative) {
  SmallVector<std::string> candidates;
  if (!builtIn.empty())
    candidates.push_back(builtIn.str());
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(variable); root && *root)
      candidates.push_back((Twine(root) + "/" + relative).str());
  candidates.push_back(("/usr/local/cuda/" + relative).str());
  return candidates;
}

std::string loom::cuda::libdevicePath() {
#ifdef LOOM_CUDA_LIBDEVICE
  StringRef builtIn = LOOM_CUDA_LIBDEVICE;
#else
  StringRef builtIn;
#endif
  for (const std::string &path :
       toolkitFiles(builtIn, "nvvm/libdevice/libdevice.10.bc"))
    if (llvm::sys::fs::is_regular_file(path))
      return path;
  return "";
}

std::string loom::cuda::ptxasPath() {
#ifdef LOOM_PTXAS
  StringRef builtIn = LOOM_PTXAS;
#else
  StringRef builtIn;
#endif
  for (const std::string &path : toolkitFiles(builtIn, "bin/ptxas"))
    if (llvm::sys::fs::can_execute(path))
      return path;
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  return "";
}

FailureOr<std::string> loom::cuda::assemblePtx(StringRef ptx, StringRef chip,
                                               std::string &error) {
  std::string ptxas = ptxasPath();
  if (ptxas.empty()) {
    error = "no ptxas: CUDA code generation needs the CUDA toolkit's "
            "bin/ptxas (looked where this build found the toolkit, in "
            "$CUDA_HOME, $CUDA_PATH, /usr/local/cuda and on PATH)";
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

/// GPU-to-NVVM makes every math op a libdevice call, even those NVPTX has
/// an instruction for (the pass declares their LLVM intrinsics illegal):
/// after it, the calls the expansions' floor, fma, abs, ... became are
/// turned back into the intrinsics, which need nothing linked.
static void replaceLibdeviceCalls(gpu::GPUModuleOp module) {
  static const llvm::StringMap<StringRef> intrinsics = {
      {"__nv_fabsf", "llvm.intr.fabs"},
      {"__nv_floorf", "llvm.intr.floor"},
      {"__nv_ceilf", "llvm.intr.ceil"},
      {"__nv_truncf", "llvm.intr.trunc"},
      {"__nv_rintf", "llvm.intr.roundeven"},
      {"__nv_roundf", "llvm.intr.round"},
      {"__nv_sqrtf", "llvm.intr.sqrt"},
      {"__nv_fmaf", "llvm.intr.fma"},
      {"__nv_copysignf", "llvm.intr.copysign"},
      {"__nv_fminf", "llvm.intr.minnum"},
      {"__nv_fmaxf", "llvm.intr.maxnum"},
      {"__nv_fabs", "llvm.intr.fabs"},
      {"__nv_floor", "llvm.intr.floor"},
      {"__nv_ceil", "llvm.intr.ceil"},
      {"__nv_trunc", "llvm.intr.trunc"},
      {"__nv_rint", "llvm.intr.roundeven"},
      {"__nv_round", "llvm.intr.round"},
      {"__nv_sqrt", "llvm.intr.sqrt"},
      {"__nv_fma", "llvm.intr.fma"},
      {"__nv_copysign", "llvm.intr.copysign"},
      {"__nv_fmin", "llvm.intr.minnum"},
      {"__nv_fmax", "llvm.intr.maxnum"},
  };
  SmallVector<LLVM::CallOp> calls;
  module.walk([&](LLVM::CallOp call) {
    if (std::optional<StringRef> callee = call.getCallee())
      if (intrinsics.count(*callee))
        calls.push_back(call);
  });
  for (LLVM::CallOp call : calls) {
    OpBuilder b(call);
    OperationState state(call.getLoc(), intrinsics.lookup(*call.getCallee()));
    state.addOperands(call.getArgOperands());
    state.addTypes(call.getResultTypes());
    call.replaceAllUsesWith(b.create(state));
    call.erase();
  }
  for (auto function :
       llvm::make_early_inc_range(module.getOps<LLVM::LLVMFuncOp>()))
    if (function.isExternal() && intrinsics.count(function.getName()) &&
        function.symbolKnownUseEmpty(module))
      function.erase();
}

FailureOr<std::string> loom::cuda::emitPtx(ModuleOp module, StringRef kernels,
                                           const PtxOptions &options,
                                           std::string &error) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  // Linked only for what the expansions leave: f64 math functions.
  std::string libdevice = libdevicePath();
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
      libdevice.empty() ? ArrayAttr() : b.getStrArrayAttr({libdevice}));
  if (!target) {
    error = "bad NVVM target chip '" + options.chip + "' or features '" +
            options.features + "'";
    return failure();
  }
  gpuModule.setTargetsAttr(b.getArrayAttr({target}));

  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
    return success();
  });
  auto fail = [&](StringRef what) {
    error = "PTX for " + options.chip +
            " failed: " + (diagnostics.empty() ? what.str() : diagnostics);
    return failure();
  };

  // f32 math functions become arithmetic, with the polynomial
  // approximations the CPU's kernels use: the two devices compute exp, log,
  // tanh and erf alike, and f32 kernels link nothing.
  if (failed(expandMathFunctions(gpuModule)))
    return fail("expanding math functions failed");
  PassManager lower(ctx);
  lower.addPass(createConvertSCFToCFPass());
  lower.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  lower.addPass(createReconcileUnrealizedCastsPass());
  if (failed(lower.run(*clone)))
    return fail("lowering to NVVM failed");
  replaceLibdeviceCalls(gpuModule);
  // Math ops GPU-to-NVVM has no libdevice function for (roundeven, of the
  // exp expansion) are left as they were: LLVM intrinsics too.
  {
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    populateMathToLLVMConversionPatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<math::MathDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(gpuModule, target, std::move(patterns))))
      return fail("lowering math to LLVM intrinsics failed");
  }
  // A function the kernels call but do not define is a libdevice function
  // (f64 math, which the expansions leave alone): linked where the toolkit's
  // libdevice is, refused by name where it is not.
  for (auto function : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (function.isExternal() &&
        (libdevice.empty() || !function.getName().starts_with("__nv_"))) {
      error = "PTX for " + options.chip + " failed: a kernel calls @" +
              function.getName().str() +
              (function.getName().starts_with("__nv_")
                   ? " (f64 math: only f32 math is computed without it), "
                     "which needs the CUDA toolkit's "
                     "nvvm/libdevice/libdevice.10.bc (looked where this build "
                     "found the toolkit, in $CUDA_HOME, $CUDA_PATH and "
                     "/usr/local/cuda)"
                   : ", which nothing defines");
      return failure();
    }
  PassManager serialize(ctx);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX text, not a cubin
  serialize.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(serialize.run(*clone)))
    return fail("the NVPTX backend failed");
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
