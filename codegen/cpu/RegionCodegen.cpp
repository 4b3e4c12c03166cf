//===- RegionCodegen.cpp - loom.fusion regions to native code -------------===//
//
// addRegion: a region becomes a RegionGraph (RegionGraph.h); the graph's
// structural key finds a kernel made before, or a new kernel in
// scf/arith/math/vector (RegionLowering.h) joins the codegen's own module.
// Regions repeat across layers and differ, if at all, in the offsets of
// their dropout sites: the base model's 345 regions make 140 entry points
// over 33 kernel bodies.
//
// emitSharedObject: math ops become MLIR's polynomial approximations
// (inline, vectorizable; exp, log, tanh, erf), everything lowers to the LLVM
// dialect, is split into one module per hardware thread, translated to LLVM
// IR, and compiled in parallel by ObjectEmitter.h, which links the objects.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/RegionCodegen.h"
#include "codegen/common/MathExpansion.h"
#include "codegen/common/RegionGraph.h"
#include "codegen/cpu/ObjectEmitter.h"
#include "codegen/cpu/RegionLowering.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <thread>

using namespace mlir;
using namespace loom;

struct CpuRegionCodegen::Impl {
  MLIRContext *context;
  OwningOpRef<ModuleOp> module;
  /// By structural key and dropout offsets: the kernel.
  llvm::StringMap<RegionKernel> kernels;
  /// By structural key, for regions with dropout: the shared body.
  llvm::StringMap<std::string> bodies;
  /// For a kernel that calls a shared body: that body, so both are
  /// compiled together.
  llvm::StringMap<std::string> groupOf;
  cpu::CodegenTarget target;
  unsigned lanes = 8;
};

CpuRegionCodegen::CpuRegionCodegen(MLIRContext *context,
                                   const cpu::CodegenTarget &target)
    : impl(std::make_unique<Impl>()) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
  context->loadDialect<arith::ArithDialect, cf::ControlFlowDialect,
                       func::FuncDialect, LLVM::LLVMDialect, math::MathDialect,
                       scf::SCFDialect, vector::VectorDialect>();
  impl->context = context;
  impl->module = ModuleOp::create(UnknownLoc::get(context));
  impl->target = target;
  impl->lanes = std::max(1u, target.vectorBits / 32);
}

CpuRegionCodegen::~CpuRegionCodegen() = default;

FailureOr<RegionKernel> CpuRegionCodegen::addRegion(FusionOp fusion) {
  // Building the graph is cheap next to compiling a kernel; its key sees
  // through SSA names, the memory plan and the order of equal regions.
  auto graph = codegen::buildRegionGraph(fusion);
  if (failed(graph))
    return failure();
  std::string structure = codegen::structuralKey(*graph);
  SmallVector<int64_t> offsets = codegen::dropoutOffsets(*graph);
  std::string key = structure + "\noffsets";
  for (int64_t o : offsets)
    key += " " + std::to_string(o);
  auto it = impl->kernels.find(key);
  if (it != impl->kernels.end())
    return it->second;

  RegionKernel kernel;
  kernel.symbol = "loom_region_" + std::to_string(impl->kernels.size());
  kernel.parallel = graph->parallel;
  cpu::KernelOptions options{impl->lanes, impl->target.libm};
  if (offsets.empty()) {
    cpu::emitKernel(*graph, *impl->module, kernel.symbol, options);
  } else {
    // Dropout sites differ per layer only in their offsets: one body per
    // structure, one small entry point per set of offsets.
    auto [body, added] = impl->bodies.try_emplace(
        structure, "loom_body_" + std::to_string(impl->bodies.size()));
    if (added)
      cpu::emitKernel(*graph, *impl->module, body->second, options);
    cpu::emitDropoutWrapper(*impl->module, kernel.symbol, body->second,
                            offsets);
    impl->groupOf[kernel.symbol] = body->second;
  }
  impl->kernels[key] = kernel;
  return kernel;
}

/// scf/arith/math/vector/func to the LLVM dialect.
static LogicalResult lowerKernels(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  if (failed(expandMathFunctions(module)))
    return failure();
  {
    RewritePatternSet patterns(ctx);
    // Broadcasts of scalars become splats, which lower to LLVM directly.
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    // bf16 conversions as integer arithmetic: LLVM makes a truncation to
    // bf16 a call of __truncsfbf2 on x86 CPUs without AVX512-BF16, which the
    // C runtimes of our targets do not all have (the kernel's shared object
    // would not load), and the shifts are as fast as that call's body.
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(module, std::move(patterns))))
      return failure();
  }
  {
    RewritePatternSet patterns(ctx);
    populateSCFToControlFlowConversionPatterns(patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<scf::SCFDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return failure();
  }
  {
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    populateVectorToLLVMConversionPatterns(converter, patterns,
                                           /*reassociateFPReductions=*/true);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(*ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return failure();
  }
  PassManager pm(ctx);
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

FailureOr<OwningOpRef<ModuleOp>> CpuRegionCodegen::lowerToLLVMDialect() {
  OwningOpRef<ModuleOp> lowered = impl->module->clone();
  if (failed(lowerKernels(*lowered)))
    return failure();
  return std::move(lowered);
}

/// Splits `module` (in the LLVM dialect) into at most `count` modules of
/// similar size; each has every declaration and global, and whole groups of
/// functions (a shared body with the entry points that call it).
static SmallVector<OwningOpRef<ModuleOp>>
partition(ModuleOp module, unsigned count,
          const llvm::StringMap<std::string> &groupOf) {
  SmallVector<Operation *> shared;
  llvm::MapVector<StringRef, SmallVector<Operation *>> groups;
  llvm::StringMap<size_t> sizes;
  for (Operation &op : *module.getBody()) {
    auto fn = dyn_cast<LLVM::LLVMFuncOp>(op);
    if (!fn || fn.isExternal()) {
      shared.push_back(&op);
      continue;
    }
    auto it = groupOf.find(fn.getName());
    StringRef group = it == groupOf.end() ? fn.getName() : it->second;
    groups[group].push_back(&op);
    size_t ops = 0;
    fn.walk([&](Operation *) { ++ops; });
    sizes[group] += ops;
  }
  SmallVector<StringRef> order;
  for (auto &[group, fns] : groups)
    order.push_back(group);
  llvm::stable_sort(
      order, [&](StringRef a, StringRef b) { return sizes[a] > sizes[b]; });
  count = std::max(1u, std::min<unsigned>(count, order.size()));
  SmallVector<OwningOpRef<ModuleOp>> parts;
  SmallVector<size_t> load(count, 0);
  for (unsigned i = 0; i < count; ++i) {
    parts.push_back(ModuleOp::create(module.getLoc()));
    OpBuilder b(parts.back()->getBodyRegion());
    for (Operation *op : shared)
      b.clone(*op);
  }
  for (StringRef group : order) {
    unsigned least = std::min_element(load.begin(), load.end()) - load.begin();
    load[least] += sizes[group];
    OpBuilder b = OpBuilder::atBlockEnd(parts[least]->getBody());
    for (Operation *op : groups[group])
      b.clone(*op);
  }
  return parts;
}

FailureOr<std::string> CpuRegionCodegen::emitSharedObject(std::string &error) {
  std::string diagnostics;
  FailureOr<OwningOpRef<ModuleOp>> lowered = failure();
  {
    ScopedDiagnosticHandler handler(impl->context, [&](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
    lowered = lowerToLLVMDialect();
  }
  if (failed(lowered)) {
    error = "lowering the kernels to the LLVM dialect failed\n" + diagnostics;
    return failure();
  }

  // LLVM's -O3 and code generation take most of the time: each part gets
  // its own LLVM context and thread. Translation stays on this thread, as
  // it reads the MLIR context.
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  SmallVector<OwningOpRef<ModuleOp>> parts =
      partition(**lowered, threads, impl->groupOf);
  std::vector<std::unique_ptr<llvm::LLVMContext>> contexts;
  std::vector<std::unique_ptr<llvm::Module>> modules;
  for (auto &part : parts) {
    contexts.push_back(std::make_unique<llvm::LLVMContext>());
    modules.push_back(
        translateModuleToLLVMIR(*part, *contexts.back(), "loom_kernels"));
    if (!modules.back()) {
      error = "translating the kernels to LLVM IR failed";
      return failure();
    }
  }
  std::vector<std::string> objects(modules.size()), errors(modules.size());
  auto compile = [&](size_t i) {
    auto object = cpu::emitObject(*modules[i], impl->target);
    if (object)
      objects[i] = std::move(*object);
    else
      errors[i] = llvm::toString(object.takeError());
  };
  std::vector<std::thread> workers;
  for (size_t i = 1; i < modules.size(); ++i)
    workers.emplace_back(compile, i);
  compile(0);
  for (std::thread &t : workers)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return failure();
    }
  auto shared = cpu::linkSharedObject(objects);
  if (!shared) {
    error = llvm::toString(shared.takeError());
    return failure();
  }
  return std::move(*shared);
}
