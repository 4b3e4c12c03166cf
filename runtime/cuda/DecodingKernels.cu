//===- DecodingKernels.cu - Row gathers, argmax and top-k on the GPU ------===//
//
// What beam search and greedy decoding do between two decoder steps, on the
// device so that the [rows, vocabulary] scores never cross to the host:
// only the rows * k winners do. One block per row; a block's threads scan
// the row with a stride, then fold their candidates through shared memory.
// The order is the CPU device's (runtime/cpu/CpuDevice.cpp): higher values
// first, NaN below every number, the lower index first among equals, so
// that both devices pick the same tokens from the same scores.
//
// top-k makes k passes over the row; pass j takes the best element ranked
// strictly below pass j-1's pick. The order is total (ties are broken by
// index), so no element is taken twice and none is skipped. k is a beam
// width (a few to a few dozen), and a pass costs one read of the row.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace {

using loom::cuda::launched;

constexpr int kThreads = 256;

struct Candidate {
  float value;
  int64_t index; // -1: none
};

/// Whether candidate a ranks above b: a higher number, or NaN never above
/// a number, and the lower index among equals; "none" ranks below all.
__device__ bool ranksAbove(Candidate a, Candidate b) {
  if (a.index < 0)
    return false;
  if (b.index < 0)
    return true;
  bool aNan = isnan(a.value), bNan = isnan(b.value);
  if (aNan != bNan)
    return bNan;
  if (!aNan && a.value != b.value)
    return a.value > b.value;
  return a.index < b.index;
}

/// The best candidate of the block (thread 0's result is everyone's).
__device__ Candidate blockBest(Candidate mine) {
  __shared__ float values[kThreads];
  __shared__ int64_t indices[kThreads];
  values[threadIdx.x] = mine.value;
  indices[threadIdx.x] = mine.index;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      Candidate a{values[threadIdx.x], indices[threadIdx.x]};
      Candidate b{values[threadIdx.x + half], indices[threadIdx.x + half]};
      if (ranksAbove(b, a)) {
        values[threadIdx.x] = b.value;
        indices[threadIdx.x] = b.index;
      }
    }
    __syncthreads();
  }
  Candidate best{values[0], indices[0]};
  __syncthreads(); // before the slots are reused
  return best;
}

/// The best element of `row` ranked strictly below `after` (all of them
/// when after.index < 0).
__device__ Candidate bestBelow(const float *row, int64_t n, Candidate after) {
  Candidate mine{0.0f, -1};
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    Candidate c{row[i], i};
    if (after.index >= 0 && !ranksAbove(after, c))
      continue;
    if (ranksAbove(c, mine))
      mine = c;
  }
  return blockBest(mine);
}

__global__ void __launch_bounds__(kThreads)
    argmaxRows(const float *scores, int64_t n, int32_t *out) {
  const float *row = scores + blockIdx.x * n;
  Candidate best = bestBelow(row, n, Candidate{0.0f, -1});
  if (threadIdx.x == 0)
    out[blockIdx.x] = static_cast<int32_t>(best.index);
}

__global__ void __launch_bounds__(kThreads)
    topKRows(const float *scores, int64_t n, int64_t k, float *values,
             int32_t *indices) {
  const float *row = scores + blockIdx.x * n;
  Candidate last{0.0f, -1};
  for (int64_t j = 0; j < k; ++j) {
    last = bestBelow(row, n, last);
    if (threadIdx.x == 0) {
      values[blockIdx.x * k + j] = last.value;
      indices[blockIdx.x * k + j] = static_cast<int32_t>(last.index);
    }
  }
}

/// One block per gathered row; 16-byte words where the row allows them.
__global__ void gatherRowsKernel(const char *src, int64_t rowBytes,
                                 const int64_t *rows, char *dst) {
  const char *from = src + rows[blockIdx.x] * rowBytes;
  char *to = dst + blockIdx.x * rowBytes;
  bool wide = rowBytes % 16 == 0 &&
              reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
              reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  if (wide) {
    const int4 *f = reinterpret_cast<const int4 *>(from);
    int4 *t = reinterpret_cast<int4 *>(to);
    for (int64_t i = threadIdx.x; i < rowBytes / 16; i += blockDim.x)
      t[i] = f[i];
    return;
  }
  for (int64_t i = threadIdx.x; i < rowBytes; i += blockDim.x)
    to[i] = from[i];
}

/// Grid sizes past this are refused rather than launched (CUDA's limit on
/// gridDim.x is 2^31 - 1).
constexpr int64_t kMaxRows = (int64_t(1) << 31) - 1;

loom::Status checkRows(int64_t rows, const char *what) {
  if (rows <= kMaxRows)
    return loom::Status::success();
  return loom::Status::failure(std::string(what) + ": " + std::to_string(rows) +
                               " rows are more than one launch takes");
}

} // namespace

loom::Status loom::cuda::gatherRowsOnDevice(const void *src, int64_t rowBytes,
                                            const int64_t *rows, int64_t count,
                                            void *dst, void *stream) {
  if (count == 0 || rowBytes == 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(checkRows(count, "gatherRows"));
  gatherRowsKernel<<<static_cast<unsigned>(count), kThreads, 0,
                     static_cast<cudaStream_t>(stream)>>>(
      static_cast<const char *>(src), rowBytes, rows, static_cast<char *>(dst));
  return launched("gatherRows");
}

loom::Status loom::cuda::argmaxOnDevice(const float *scores, int64_t rows,
                                        int64_t n, int32_t *out, void *stream) {
  if (rows == 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(checkRows(rows, "argmax"));
  argmaxRows<<<static_cast<unsigned>(rows), kThreads, 0,
               static_cast<cudaStream_t>(stream)>>>(scores, n, out);
  return launched("argmax");
}

loom::Status loom::cuda::topKOnDevice(const float *scores, int64_t rows,
                                      int64_t n, int64_t k, float *values,
                                      int32_t *indices, void *stream) {
  if (rows == 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(checkRows(rows, "topK"));
  topKRows<<<static_cast<unsigned>(rows), kThreads, 0,
             static_cast<cudaStream_t>(stream)>>>(scores, n, k, values,
                                                  indices);
  return launched("topK");
}
