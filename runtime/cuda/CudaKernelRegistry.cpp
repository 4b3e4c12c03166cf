//===- CudaKernelRegistry.cpp - The CUDA library kernels by name ----------===//

#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <map>

using loom::Status;
using loom::cuda::CudaKernelCall;
using loom::cuda::CudaLibraryKernel;

namespace {

/// A view with storage of its own, or an output copied out: operand 0 into
/// the last argument (the CPU kernel's contract, runtime/cpu/ShapeKernels).
Status copyKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(loom::abi::decodeNoAttrs("copy", call.attrs));
  if (call.args.size() < 2)
    return Status::failure("copy: expected at least 2 tensor arguments, got " +
                           std::to_string(call.args.size()));
  const loom::runtime::TensorRef &in = call.args.front(),
                                 &out = call.args.back();
  if (in.bytes() != out.bytes())
    return Status::failure("copy: " + loom::runtime::shapeString(in.shape) +
                           " and " + loom::runtime::shapeString(out.shape) +
                           " differ in size");
  if (in.data == out.data || in.bytes() == 0)
    return Status::success();
  cudaError_t error =
      cudaMemcpyAsync(out.data, in.data, in.bytes(), cudaMemcpyDeviceToDevice,
                      static_cast<cudaStream_t>(call.stream));
  if (error != cudaSuccess)
    return Status::failure(std::string("copy: ") + cudaGetErrorString(error),
                           loom::ErrorCode::Internal);
  return Status::success();
}

const std::map<std::string, CudaLibraryKernel> &registry() {
  static const std::map<std::string, CudaLibraryKernel> kernels = {
      {"copy", copyKernel},
      // Shapes, indices and masks (ShapeKernels.cu, IndexKernels.cu).
      {"broadcast_as", loom::cuda::broadcastAsKernel},
      {"causal_mask", loom::cuda::causalMaskKernel},
      {"concat", loom::cuda::concatKernel},
      {"gather", loom::cuda::gatherKernel},
      {"iota", loom::cuda::iotaKernel},
      {"one_hot", loom::cuda::oneHotKernel},
      {"padding_mask", loom::cuda::paddingMaskKernel},
      {"scatter_add", loom::cuda::scatterAddKernel},
      {"slice", loom::cuda::sliceKernel},
      {"slice_grad", loom::cuda::sliceGradKernel},
      {"sum_to", loom::cuda::sumToKernel},
      {"transpose", loom::cuda::transposeKernel},
      // Losses and GEMMs (LossKernels.cu, LinearKernels.cpp).
      {"cross_entropy", loom::cuda::crossEntropyKernel},
      {"cross_entropy_grad", loom::cuda::crossEntropyGradKernel},
      {"linear", loom::cuda::linearKernel},
      {"matmul", loom::cuda::matmulKernel},
      // Fused attention (AttentionKernels.cu).
      {"attention", loom::cuda::attentionKernel},
      {"attention_grad", loom::cuda::attentionGradKernel},
  };
  return kernels;
}

} // namespace

CudaLibraryKernel loom::cuda::findCudaLibraryKernel(const std::string &name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}
