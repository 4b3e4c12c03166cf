//===- CudaExecutableWriter.cpp - Planned modules to CUDA executables -----===//

#include "codegen/cuda/CudaExecutableWriter.h"

#include "codegen/cuda/CudaRegionCodegen.h"
#include "codegen/cuda/GpuRegionLowering.h"
#include "ir/ArenaPlan.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace loom {
namespace {

/// The architectures the CUDA target compiles for: tensor-core GPUs from
/// the A100 on, which the runtime's library kernels need.
constexpr llvm::StringLiteral kCudaArchs[] = {"sm_80", "sm_86", "sm_89",
                                              "sm_90"};

runtime::CudaLaunch::Shape launchShape(StringRef shape) {
  if (shape == cuda::kLaunchElements)
    return runtime::CudaLaunch::ELEMENTS;
  if (shape == cuda::kLaunchRows)
    return runtime::CudaLaunch::ROWS;
  if (shape == cuda::kLaunchBlock)
    return runtime::CudaLaunch::BLOCK;
  return runtime::CudaLaunch::SHAPE_UNSPECIFIED;
}

/// GPU kernels for one architecture, as a cubin and as PTX.
class CudaKernelTarget final : public KernelTarget {
public:
  CudaKernelTarget(MLIRContext *context, std::string arch)
      : arch(std::move(arch)), codegen(context) {}

  FailureOr<std::string> addRegion(FusionOp fusion) override {
    return codegen.addRegion(fusion);
  }

  void describeKernel(runtime::Kernel &kernel) override {
    auto [shape, threads] = codegen.launchOf(kernel.symbol());
    runtime::CudaLaunch &launch = *kernel.mutable_cuda_launch();
    launch.set_shape(launchShape(shape));
    launch.set_block_threads(threads);
    // Rows are independent unless one block must take them all in order.
    kernel.set_parallel(launch.shape() != runtime::CudaLaunch::BLOCK);
  }

  LogicalResult finish(ModuleOp module, runtime::Executable &exe) override {
    exe.set_target(runtime::Executable::CUDA);
    runtime::CudaTarget &record = *exe.mutable_cuda_target();
    record.set_arch(arch);
    record.set_alignment(kArenaAlignment);
    cuda::PtxOptions options;
    options.chip = arch;
    std::string error;
    FailureOr<std::string> ptx = codegen.emitPtx(options, error);
    if (failed(ptx))
      return module.emitError("CUDA code generation failed: ") << error;
    FailureOr<std::string> cubin = cuda::assemblePtx(*ptx, arch, error);
    if (failed(cubin))
      return module.emitError("CUDA code generation failed: ") << error;
    record.set_ptx(std::move(*ptx));
    exe.set_code(std::move(*cubin));
    return success();
  }

private:
  std::string arch;
  cuda::CudaRegionCodegen codegen;
};

} // namespace

bool isCudaArch(StringRef arch) { return llvm::is_contained(kCudaArchs, arch); }

std::string cudaArchList() {
  std::string list;
  for (StringRef arch : kCudaArchs)
    list += (list.empty() ? "" : ", ") + arch.str();
  return list;
}

FailureOr<runtime::Executable>
writeCudaExecutable(ModuleOp planned, const CudaExecutableOptions &options) {
  if (!isCudaArch(options.arch))
    return planned.emitError("unknown CUDA architecture '")
           << options.arch << "'; the choices are " << cudaArchList();
  CudaKernelTarget kernels(planned.getContext(), options.arch);
  return buildExecutable(planned, options, kernels);
}

} // namespace loom
