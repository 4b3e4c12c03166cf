//===- CudaRegionCodegen.cpp - loom.fusion regions to GPU kernels ---------===//

#include "codegen/cuda/CudaRegionCodegen.h"

#include "codegen/common/RegionGraph.h"
#include "codegen/cuda/GpuRegionLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace loom;

cuda::CudaRegionCodegen::CudaRegionCodegen(MLIRContext *context) {
  context->loadDialect<gpu::GPUDialect, arith::ArithDialect,
                       cf::ControlFlowDialect, LLVM::LLVMDialect,
                       math::MathDialect, scf::SCFDialect>();
  OpBuilder b(context);
  holder = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(holder->getBody());
  b.create<gpu::GPUModuleOp>(b.getUnknownLoc(), kKernelModule);
}

FailureOr<std::string> cuda::CudaRegionCodegen::addRegion(FusionOp fusion) {
  FailureOr<codegen::RegionGraph> graph = codegen::buildRegionGraph(fusion);
  if (failed(graph))
    return failure();
  std::string why;
  if (failed(canEmitGpuKernel(*graph, why)))
    return fusion.emitError("cannot be a CUDA kernel: ") << why;
  // Dropout offsets are constants of a GPU kernel, so they are part of
  // what makes two kernels the same.
  std::string key = codegen::structuralKey(*graph);
  for (int64_t offset : codegen::dropoutOffsets(*graph))
    key += ";dropout@" + std::to_string(offset);
  auto [it, added] = symbols.try_emplace(key, "");
  if (!added)
    return it->second;
  it->second = "region_" + std::to_string(symbols.size() - 1);
  auto kernels = holder->lookupSymbol<gpu::GPUModuleOp>(kKernelModule);
  emitGpuKernel(*graph, *holder, kernels, it->second);
  return it->second;
}

std::pair<std::string, int32_t>
cuda::CudaRegionCodegen::launchOf(StringRef symbol) {
  auto kernels = holder->lookupSymbol<gpu::GPUModuleOp>(kKernelModule);
  auto kernel = kernels.lookupSymbol<gpu::GPUFuncOp>(symbol);
  assert(kernel && "launchOf: not a kernel of this codegen");
  std::optional<ArrayRef<int32_t>> block = kernel.getKnownBlockSize();
  return {kernel->getAttrOfType<StringAttr>(kLaunchAttr).str(),
          block ? (*block)[0] : 0};
}
