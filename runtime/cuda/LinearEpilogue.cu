//===- LinearEpilogue.cu - What cuBLASLt's epilogues cannot do ------------===//
//
// loom.linear's epilogue is act(x W^T + bias) + residual, with GELU in its
// exact erf form (runtime/cpu/VecMath.h). cuBLASLt's GELU epilogues are the
// tanh approximation, off by up to about 1e-3, and its C operand (beta = 1)
// is added before the bias and the activation, not after; so
// LinearKernels.cpp asks cuBLASLt only for the bias (and a ReLU that no
// residual follows), and this elementwise pass does the rest: GELU, and a
// residual after an activation. It also stands in for the GEMM where K is
// 0 (then the product is zeros). One thread per element, over a grid that
// strides; in and out may be the same tensor.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

using loom::ErrorCode;
using loom::Status;
using loom::abi::Activation;

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

__global__ void __launch_bounds__(kThreads)
    epilogue(const float *in, const float *bias, const float *residual,
             float *out, int64_t count, int64_t n, Activation activation) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    float y = in ? in[i] : 0.0f;
    if (bias)
      y += bias[i % n];
    if (activation == Activation::Relu)
      // A NaN stays NaN, as the interpreter's (and torch's) relu keeps it.
      y = y < 0.0f ? 0.0f : y;
    else if (activation == Activation::Gelu)
      // x Phi(x) with the exact erf, as loom.gelu defines it.
      y = 0.5f * y * (1.0f + erff(y * 0.70710678118654752f));
    if (residual)
      y += residual[i];
    out[i] = y;
  }
}

} // namespace

Status loom::cuda::linearEpilogueOnDevice(const float *in, const float *bias,
                                          const float *residual, float *out,
                                          int64_t rows, int64_t n,
                                          Activation activation, void *stream) {
  int64_t count = rows * n;
  if (count == 0)
    return Status::success();
  unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks));
  epilogue<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      in, bias, residual, out, count, n, activation);
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess)
    return Status::success();
  return Status::failure(std::string("linear epilogue: ") +
                             cudaGetErrorString(error),
                         ErrorCode::Internal);
}
