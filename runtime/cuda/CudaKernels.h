//===- CudaKernels.h - The CUDA runtime's library kernels -------*- C++ -*-===//
//
// The CUDA versions of abi/LibraryCalls.h's kernels, the counterparts of
// runtime/cpu/Kernels.h: a kernel checks its call (counts, dtypes, shapes,
// attributes) on the host, as the CPU kernel does, then queues its work on
// the call's stream and returns without waiting. Tensors are in device
// memory; a kernel never reads them on the host.
//
// The registry holds the kernels written so far: an executable that calls
// one it lacks is refused at load with the kernel's name.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDAKERNELS_H
#define LOOM_RUNTIME_CUDA_CUDAKERNELS_H

#include "abi/LibraryCalls.h"
#include "runtime/Tensor.h"

#include <string>
#include <vector>

namespace loom::cuda {

struct CudaKernelCall {
  std::vector<runtime::TensorRef> args; // present operands, then results
  abi::CallAttrs attrs;
  void *stream = nullptr; // the device's cudaStream_t
};

using CudaLibraryKernel = Status (*)(const CudaKernelCall &call);

/// The kernel registered under `name`, or nullptr.
CudaLibraryKernel findCudaLibraryKernel(const std::string &name);

/// What decoding needs between steps (runtime/Device.h), on `stream`:
/// dst[i] = src[rows[i]] for `count` rows of `rowBytes` bytes, the row
/// indices already in device memory; per row of f32 `scores` [rows, n] the
/// index of the largest value; the `k` largest values and their indices,
/// best first. NaN ranks below every number, and the lower index first
/// among equals, as on the CPU.
Status gatherRowsOnDevice(const void *src, int64_t rowBytes,
                          const int64_t *rows, int64_t count, void *dst,
                          void *stream);
Status argmaxOnDevice(const float *scores, int64_t rows, int64_t n,
                      int32_t *out, void *stream);
Status topKOnDevice(const float *scores, int64_t rows, int64_t n, int64_t k,
                    float *values, int32_t *indices, void *stream);

// Shapes, indices and masks. transpose, slice and broadcast_as are one
// strided gather; slice_grad, concat and sum_to have kernels of their own
// (ShapeKernels.cu). gather and scatter_add check their ids on the device
// and wait for the stream to refuse a bad one (IndexKernels.cu).
Status transposeKernel(const CudaKernelCall &call);
Status sliceKernel(const CudaKernelCall &call);
Status sliceGradKernel(const CudaKernelCall &call);
Status concatKernel(const CudaKernelCall &call);
Status broadcastAsKernel(const CudaKernelCall &call);
Status sumToKernel(const CudaKernelCall &call);
Status gatherKernel(const CudaKernelCall &call);
Status scatterAddKernel(const CudaKernelCall &call);
Status oneHotKernel(const CudaKernelCall &call);
Status paddingMaskKernel(const CudaKernelCall &call);
Status causalMaskKernel(const CudaKernelCall &call);
Status iotaKernel(const CudaKernelCall &call);

// Losses and GEMMs. cross_entropy and cross_entropy_grad are one block per
// row of logits (LossKernels.cu); linear and matmul are cuBLASLt GEMMs
// (LinearKernels.cpp), with linear's exact GELU, and a residual that cannot
// ride on the GEMM, applied by linearEpilogueOnDevice (LinearEpilogue.cu).
Status crossEntropyKernel(const CudaKernelCall &call);
Status crossEntropyGradKernel(const CudaKernelCall &call);
Status linearKernel(const CudaKernelCall &call);
Status matmulKernel(const CudaKernelCall &call);
/// out[i, j] = act(in[i, j] + bias[j]) + residual[i, j] over [rows, n], on
/// `stream`; in == nullptr reads as zeros, a null bias or residual is left
/// out, and `in` may be `out` (each element is read before it is written).
Status linearEpilogueOnDevice(const float *in, const float *bias,
                              const float *residual, float *out, int64_t rows,
                              int64_t n, abi::Activation activation,
                              void *stream);

// Fused attention and its gradient (AttentionKernels.cu): a warp per query
// row with an online softmax over blocks of keys; the gradient recomputes
// the probabilities from the forward's lse.
Status attentionKernel(const CudaKernelCall &call);
Status attentionGradKernel(const CudaKernelCall &call);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAKERNELS_H
