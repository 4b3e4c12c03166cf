//===- ObjectEmitter.cpp - LLVM IR to a CPU shared object -----------------===//
//
// Kernels are vectorized explicitly when they are generated, so the -O3
// pipeline runs without LLVM's loop and SLP vectorizers: they would only
// re-vectorize remainder loops, and they are the slowest part of -O3 on a
// module of a few hundred kernels.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/ObjectEmitter.h"

#include "abi/CpuFeatures.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <memory>

using namespace loom;
using namespace loom::cpu;

static void initializeNativeTarget() {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
}

static CodegenTarget nativeTarget() {
  CodegenTarget native;
  native.level = std::string(abi::kNativeCpuLevel);
  native.triple = llvm::sys::getProcessTriple();
  native.cpu = llvm::sys::getHostCPUName().str();
  // Every feature the host reports, enabled or not: a CPU name alone would
  // also claim what a hypervisor or the operating system turned off. Those
  // LOOM_CPU_MASK_FEATURES names are off (a test's machine acting as one
  // without them, as the runtime's check does; read at the first compile).
  std::vector<std::string> masked = abi::maskedCpuFeatures();
  std::string features;
  for (const auto &f : llvm::sys::getHostCPUFeatures()) {
    bool on = f.second && std::find(masked.begin(), masked.end(),
                                    f.first().str()) == masked.end();
    if (!features.empty())
      features += ",";
    features += (on ? "+" : "-") + f.first().str();
    if (on && f.first() == "avx512f")
      native.vectorBits = std::max(native.vectorBits, 512u);
    else if (on && f.first() == "avx")
      native.vectorBits = std::max(native.vectorBits, 256u);
  }
  native.features = std::move(features);
  return native;
}

const CodegenTarget &cpu::hostTarget() {
  static const CodegenTarget host = nativeTarget();
  return host;
}

llvm::Expected<CodegenTarget> cpu::codegenTarget(llvm::StringRef level) {
  if (level == abi::kNativeCpuLevel)
    return hostTarget();
  if (!abi::isCpuLevel(level))
    return llvm::createStringError("unknown CPU level '" + level.str() +
                                   "'; the levels are " + abi::cpuLevelList());
  CodegenTarget target;
  target.level = level.str();
  target.triple = llvm::sys::getProcessTriple();
  if (llvm::Triple(target.triple).getArch() != llvm::Triple::x86_64)
    return llvm::createStringError(
        "CPU level '" + level.str() + "' is an x86-64 level, but this " +
        "compiler generates code for " + target.triple + "; use --cpu native");
  // LLVM names a CPU after each level, with exactly the level's features.
  // x86-64-v4 tunes LLVM's own vectorizers to 256 bits, but the kernels'
  // explicit 512-bit vectors still compile to ZMM registers.
  target.cpu = level.str();
  target.vectorBits = abi::cpuLevelVectorBits(level);
  return target;
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createMachine(const CodegenTarget &target) {
  initializeNativeTarget();
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget)
    return llvm::createStringError("no LLVM target for " + target.triple +
                                   ": " + error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " +
                                   target.cpu);
  return std::move(machine);
}

llvm::Expected<std::vector<std::string>>
cpu::enabledCpuFeatures(const CodegenTarget &target) {
  auto machine = createMachine(target);
  if (!machine)
    return machine.takeError();
  // The subtarget has the CPU's features and the feature string's, with
  // everything they imply (avx2 brings avx), as code generation sees them.
  const llvm::MCSubtargetInfo *subtarget = (*machine)->getMCSubtargetInfo();
  llvm::StringMap<unsigned> bits;
  for (const llvm::SubtargetFeatureKV &kv :
       subtarget->getAllProcessorFeatures())
    bits[kv.Key] = kv.Value;
  std::vector<std::string> enabled;
  for (const std::string &feature : abi::knownCpuFeatures()) {
    auto it = bits.find(feature);
    // A name LLVM does not know would never be recorded, and its check at
    // load would be lost without a word.
    if (it == bits.end())
      return llvm::createStringError(
          "LLVM knows no CPU feature '" + feature +
          "' of abi/CpuFeatures.h; the two spell features differently");
    if (subtarget->getFeatureBits().test(it->second))
      enabled.push_back(feature);
  }
  return enabled; // knownCpuFeatures() is sorted
}

llvm::Expected<std::string> cpu::emitObject(llvm::Module &module,
                                            const CodegenTarget &target) {
  auto machine = createMachine(target);
  if (!machine)
    return machine.takeError();
  module.setTargetTriple((*machine)->getTargetTriple().str());
  module.setDataLayout((*machine)->createDataLayout());

  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  tuning.LoopInterleaving = false;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(machine->get(), tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);

  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                      llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  codegen.run(module);
  return std::string(object.str());
}

namespace {

/// Temporary files removed when it goes out of scope.
class TempFiles {
public:
  ~TempFiles() {
    for (const std::string &p : paths)
      llvm::sys::fs::remove(p);
  }
  llvm::Expected<std::string> create(llvm::StringRef suffix) {
    llvm::SmallString<128> path;
    int fd;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "loom-kernels", suffix, fd, path))
      return llvm::createStringError("cannot create a temporary file: " +
                                     ec.message());
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    paths.push_back(path.str().str());
    return paths.back();
  }

private:
  std::vector<std::string> paths;
};

} // namespace

llvm::Expected<std::string>
cpu::linkSharedObject(llvm::ArrayRef<std::string> objects) {
  TempFiles temps;
  auto output = temps.create("so");
  auto log = temps.create("log");
  if (!output)
    return output.takeError();
  if (!log)
    return log.takeError();
  std::vector<std::string> inputs;
  for (const std::string &object : objects) {
    auto input = temps.create("o");
    if (!input)
      return input.takeError();
    std::error_code ec;
    llvm::raw_fd_ostream os(*input, ec);
    if (ec)
      return llvm::createStringError("cannot write " + *input + ": " +
                                     ec.message());
    os << object;
    inputs.push_back(*input);
  }

  std::string linker;
  if (auto ld = llvm::sys::findProgramByName("ld"))
    linker = *ld;
  else if (auto cc = llvm::sys::findProgramByName("cc"))
    linker = *cc;
  else
    return llvm::createStringError(
        "no linker: neither `ld` nor `cc` is on PATH; CPU kernels are "
        "linked into a shared object with the system linker");
  llvm::SmallVector<llvm::StringRef> args = {linker, "-shared", "-o", *output};
  for (const std::string &input : inputs)
    args.push_back(input);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, *log, *log};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, redirects,
                                         0, 0, &message);
  if (status != 0) {
    std::string out;
    if (auto buffer = llvm::MemoryBuffer::getFile(*log))
      out = (*buffer)->getBuffer().str();
    return llvm::createStringError(
        "linking the kernels' shared object failed (" + linker + ", status " +
        std::to_string(status) + ")" + (message.empty() ? "" : ": " + message) +
        (out.empty() ? "" : "\n" + out));
  }
  auto buffer = llvm::MemoryBuffer::getFile(*output, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError("cannot read the linked shared object: " +
                                   buffer.getError().message());
  return (*buffer)->getBuffer().str();
}
