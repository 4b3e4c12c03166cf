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

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAKERNELS_H
