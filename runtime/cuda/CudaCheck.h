//===- CudaCheck.h - What the CUDA device's files share ---------*- C++ -*-===//
//
// The CUDA device and its kernels (CudaDevice.cpp, *Kernels.cu) turn CUDA's
// errors into the runtime's Status the same way, hold per-call scratch
// memory the same way, and their grid-stride kernels index and move bytes
// the same way: one copy of each, here.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDACHECK_H
#define LOOM_RUNTIME_CUDA_CUDACHECK_H

#include "abi/Error.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace loom::cuda {

/// A failed CUDA call as a Status: an allocation failure as OutOfMemory,
/// anything else as Internal, with CUDA's words after `what`. The error is
/// taken off CUDA's record, so that the next check does not report it again.
inline Status cudaFailure(cudaError_t error, const std::string &what) {
  cudaGetLastError();
  ErrorCode code = error == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory
                                                      : ErrorCode::Internal;
  return Status::failure(what + ": " + cudaGetErrorString(error), code);
}

inline Status cudaCheck(cudaError_t error, const std::string &what) {
  return error == cudaSuccess ? Status::success() : cudaFailure(error, what);
}

/// Whether the kernels just queued were launched.
inline Status launched(const std::string &what) {
  return cudaCheck(cudaGetLastError(), what);
}

#define LOOM_CUDA_RETURN_IF_ERROR(call, what)                                  \
  LOOM_RETURN_IF_ERROR(::loom::cuda::cudaCheck((call), (what)))

/// Device memory for one call, in stream order: allocated on `stream` and
/// freed on it once the work queued before the free is done with it.
class StreamScratch {
public:
  explicit StreamScratch(cudaStream_t stream) : stream(stream) {}
  ~StreamScratch() {
    if (memory)
      cudaFreeAsync(memory, stream);
  }
  StreamScratch(const StreamScratch &) = delete;
  StreamScratch &operator=(const StreamScratch &) = delete;

  /// `bytes` (at least one); `what` names the call for a failure.
  Status allocate(size_t bytes, const std::string &what) {
    cudaError_t error =
        cudaMallocAsync(&memory, std::max<size_t>(bytes, 1), stream);
    if (error != cudaSuccess) {
      memory = nullptr;
      return cudaFailure(error, what + ": scratch memory");
    }
    return Status::success();
  }
  template <typename T = char> T *as() const {
    return static_cast<T *>(memory);
  }

private:
  cudaStream_t stream;
  void *memory = nullptr;
};

/// The widest unit of 16, 8, 4, 2 or 1 bytes that divides every one of
/// `bytes` and aligns every one of `addresses`.
inline int64_t widestUnit(std::initializer_list<int64_t> bytes,
                          std::initializer_list<const void *> addresses) {
  for (int64_t unit = 16; unit > 1; unit /= 2) {
    bool fits = true;
    for (int64_t b : bytes)
      fits = fits && b % unit == 0;
    for (const void *a : addresses)
      fits = fits && reinterpret_cast<uintptr_t>(a) % unit == 0;
    if (fits)
      return unit;
  }
  return 1;
}

/// Calls launch(Unit{}) with the unsigned type of `unit` bytes (uint4 for
/// 16), whose alignment is its size.
template <typename Launch> void withUnit(int64_t unit, Launch &&launch) {
  switch (unit) {
  case 16:
    return launch(uint4{});
  case 8:
    return launch(static_cast<unsigned long long>(0));
  case 4:
    return launch(static_cast<uint32_t>(0));
  case 2:
    return launch(static_cast<uint16_t>(0));
  default:
    return launch(static_cast<uint8_t>(0));
  }
}

#ifdef __CUDACC__
/// A grid-stride loop's first index and step, 64-bit.
__device__ inline int64_t firstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t gridStride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}
#endif

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDACHECK_H
