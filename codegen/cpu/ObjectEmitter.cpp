//===- ObjectEmitter.cpp - LLVM IR to a host shared object ----------------===//
//
// Kernels are vectorized explicitly when they are generated, so the -O3
// pipeline runs without LLVM's loop and SLP vectorizers: they would only
// re-vectorize remainder loops, and they are the slowest part of -O3 on a
// module of a few hundred kernels.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/ObjectEmitter.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
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

#include <memory>

using namespace loom;
using namespace loom::cpu;

const HostTarget &cpu::hostTarget() {
  static HostTarget host = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    HostTarget h;
    h.triple = llvm::sys::getProcessTriple();
    h.cpu = llvm::sys::getHostCPUName().str();
    std::string features;
    for (const auto &f : llvm::sys::getHostCPUFeatures()) {
      if (!features.empty())
        features += ",";
      features += (f.second ? "+" : "-") + f.first().str();
      if (f.second && f.first() == "avx512f")
        h.vectorBits = std::max(h.vectorBits, 512u);
      else if (f.second && f.first() == "avx")
        h.vectorBits = std::max(h.vectorBits, 256u);
    }
    h.features = std::move(features);
    return h;
  }();
  return host;
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>> hostMachine() {
  const HostTarget &host = hostTarget();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(host.triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for " + host.triple + ": " +
                                   error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      host.triple, host.cpu, host.features, options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " +
                                   host.cpu);
  return std::move(machine);
}

llvm::Expected<std::string> cpu::emitObject(llvm::Module &module) {
  auto machine = hostMachine();
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
