//===- ExecutableWriter.cpp - Planned modules to CPU executables ----------===//

#include "codegen/cpu/ExecutableWriter.h"

#include "abi/LinearPrecision.h"
#include "codegen/cpu/ObjectEmitter.h"
#include "codegen/cpu/RegionCodegen.h"
#include "ir/ArenaPlan.h"
#include "ir/LoomDialect.h"

#include "mlir/IR/TypeUtilities.h"

#include <map>

using namespace mlir;

namespace loom {
namespace {

/// Native kernels for one CPU, in one shared object.
class CpuKernelTarget final : public KernelTarget {
public:
  CpuKernelTarget(MLIRContext *context, const cpu::CodegenTarget &target)
      : target(target), codegen(context, target) {}

  FailureOr<std::string> addRegion(FusionOp fusion) override {
    FailureOr<RegionKernel> kernel = codegen.addRegion(fusion);
    if (failed(kernel))
      return failure();
    parallel[kernel->symbol] = kernel->parallel;
    return kernel->symbol;
  }

  void describeKernel(runtime::Kernel &kernel) override {
    kernel.set_parallel(parallel.at(kernel.symbol()));
  }

  LogicalResult finish(ModuleOp module, runtime::Executable &exe) override {
    exe.set_target(runtime::Executable::CPU);
    llvm::Expected<std::vector<std::string>> features =
        cpu::enabledCpuFeatures(target);
    if (!features)
      return module.emitError("CPU code generation failed: ")
             << llvm::toString(features.takeError());
    runtime::CpuTarget &record = *exe.mutable_cpu_target();
    record.set_triple(target.triple);
    record.set_cpu(target.cpu);
    record.set_level(target.level);
    for (const std::string &feature : *features)
      record.add_features(feature);
    record.set_vector_bits(target.vectorBits);
    // The memory plan starts every temporary at a multiple of this; the
    // loader checks that its memory is aligned at least as much.
    record.set_alignment(kArenaAlignment);
    std::string error;
    FailureOr<std::string> code = codegen.emitSharedObject(error);
    if (failed(code))
      return module.emitError("CPU code generation failed: ") << error;
    exe.set_code(std::move(*code));
    return success();
  }

private:
  const cpu::CodegenTarget &target;
  CpuRegionCodegen codegen;
  std::map<std::string, bool> parallel; // by symbol
};

/// Whether a product in `module` reads bf16 factors.
bool hasBf16Products(ModuleOp module) {
  bool found = false;
  module.walk([&](ProductOpInterface op) {
    for (unsigned index : op.getProductOperands())
      if (getElementTypeOrSelf(op->getOperand(index)).isBF16())
        found = true;
  });
  return found;
}

} // namespace

FailureOr<runtime::Executable>
writeCpuExecutable(ModuleOp planned, const CpuExecutableOptions &options) {
  llvm::Expected<cpu::CodegenTarget> target = cpu::codegenTarget(options.cpu);
  if (!target)
    return planned.emitError(llvm::toString(target.takeError()));
  if (ErrorOr<abi::LinearPrecision> precision =
          abi::parseLinearPrecision(options.linearPrecision);
      !precision)
    return planned.emitError(precision.error());
  // Products of bf16 factors (loom-mixed-precision's) make the executable a
  // bf16 one whatever decoding was asked to multiply in: the CPU device then
  // refuses it where it has no bf16 units, as it refuses a bf16 decoder.
  std::string precision = options.linearPrecision;
  if (hasBf16Products(planned)) {
    if (precision == "int8")
      return planned.emitError(
          "the module multiplies bf16 factors (mixed-precision training), "
          "which an int8 executable cannot: compile it with --precision bf16");
    precision = "bf16";
  }
  CpuKernelTarget kernels(planned.getContext(), *target);
  FailureOr<runtime::Executable> exe =
      buildExecutable(planned, options, kernels);
  if (succeeded(exe) && precision != "fp32")
    exe->mutable_cpu_target()->set_linear_precision(precision);
  return exe;
}

} // namespace loom
