//===- ShapeKernels.cu - Transposes, slices, concats, sum_to on the GPU ---===//
//
// The CUDA counterparts of runtime/cpu/ShapeKernels.cpp, with the same checks
// (runtime/KernelChecks.h) and bit for bit the same results.
//
// Transpose, slice and broadcast_as are one strided gather, as on the CPU:
// the result is written in order while the source is read at per-dim
// strides. The host describes the walk in bytes, with the element's bytes as
// one more, innermost dim of step 1, drops unit dims and merges a dim into
// the next where the source steps over the next dim's whole extent. The
// innermost dim then always has step 1 (runs of whole elements, or a single
// element when the source is strided there), and the copy moves the widest
// unit (16, 8, 4, 2 or 1 bytes) that divides that run, every step and both
// addresses: [B, T, H, D] <-> [B, H, T, D] of f32 moves D / 4 words of 16
// bytes per row, and a transpose of the last two dims moves elements. Each
// thread of a grid-stride loop takes one unit of the result and finds its
// source with one division per merged dim. A walk that merges into one
// contiguous run is a cudaMemcpyAsync.
//
// slice_grad writes each result unit once: the slice's unit where it falls
// in [start, end), zero elsewhere. concat copies each input into its columns
// of the result with one launch per input. Element types are moved as bytes,
// so these kernels take every dtype.
//
// sum_to (f32) accumulates in double, as the CPU and the interpreter do, in
// an order fixed by the shapes alone, so that a run repeats bit for bit: no
// atomics. The input dims are split into kept and summed dims (merged as on
// the CPU). When the innermost dim is summed, a warp (a block for long sums)
// sums each result element, its lanes striding over the summed elements and
// folding their partial sums in a fixed tree. When it is kept (a bias
// gradient, [rows, cols] -> [cols]), consecutive threads take consecutive
// columns so that reads coalesce; the summed elements are cut into a number
// of chunks that depends on the shape only, each chunk summed in order into
// a double partial, and a second pass adds the partials in chunk order.
//
// Work is queued on the call's stream and nothing waits for it. Grids are
// 256-thread blocks, capped at kMaxBlocks; every index is 64-bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelChecks.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

using loom::DType;
using loom::ErrorCode;
using loom::Status;
using loom::cuda::cudaFailure;
using loom::cuda::CudaKernelCall;
using loom::cuda::firstIndex;
using loom::cuda::gridStride;
using loom::cuda::launched;
using loom::cuda::widestUnit;
using loom::cuda::withUnit;
using loom::runtime::TensorRef;

namespace {

constexpr int kThreads = 256;
/// Enough blocks of kThreads to fill an A100 or H100 several times over;
/// larger problems loop (grid-stride).
constexpr int64_t kMaxBlocks = 4096;
/// The most merged dims a walk may have (a rank-9 tensor whose dims merge
/// with none of their neighbours, plus the element's bytes).
constexpr int kMaxDims = 10;

/// Blocks of kThreads for `work` items, at most kMaxBlocks.
unsigned blocksFor(int64_t work) {
  return static_cast<unsigned>(
      std::min<int64_t>(kMaxBlocks, (work + kThreads - 1) / kThreads));
}

/// Dims walked in row-major order: index i of the walk lies `steps` apart
/// in some memory for each dim, in units of the copy (or in floats for
/// sum_to). Passed to kernels by value.
struct Walk {
  int rank = 0;
  int64_t sizes[kMaxDims];
  int64_t steps[kMaxDims];
};

/// The offset of the `index`-th position of `walk`; 0 for a walk of rank 0.
/// The outermost dim takes what is left without a division.
__device__ int64_t offsetOf(int64_t index, const Walk &walk) {
  int64_t offset = 0;
  for (int d = walk.rank - 1; d > 0; --d) {
    int64_t size = walk.sizes[d];
    int64_t quotient = index / size;
    offset += (index - quotient * size) * walk.steps[d];
    index = quotient;
  }
  if (walk.rank > 0)
    offset += index * walk.steps[0];
  return offset;
}

/// dst[i] = src[offsetOf(i, walk)] for the `count` units of the result.
template <typename Unit>
__global__ void __launch_bounds__(kThreads)
    gatherUnits(Unit *dst, const Unit *src, int64_t count, Walk walk) {
  for (int64_t i = firstIndex(); i < count; i += gridStride())
    dst[i] = src[offsetOf(i, walk)];
}

/// Rows of `rowUnits` units: row r's [begin, end) is the r-th row of
/// `src` (end - begin units each), the rest of it zero.
template <typename Unit>
__global__ void __launch_bounds__(kThreads)
    placeSlice(Unit *dst, const Unit *src, int64_t count, int64_t rowUnits,
               int64_t begin, int64_t end) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t row = i / rowUnits, column = i - row * rowUnits;
    dst[i] = column >= begin && column < end
                 ? src[row * (end - begin) + column - begin]
                 : Unit{};
  }
}

/// Row r of `src` (rows of `rowUnits`, contiguous) into dst + r * dstPitch.
template <typename Unit>
__global__ void __launch_bounds__(kThreads)
    copyRows(Unit *dst, int64_t dstPitch, const Unit *src, int64_t rowUnits,
             int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t row = i / rowUnits;
    dst[row * dstPitch + i - row * rowUnits] = src[i];
  }
}

/// dst (contiguous, `shape`) = src read at `strides` (elements per step of
/// each dim of `shape`), elements of `esize` bytes.
Status stridedGather(const char *kernel, void *dst, const void *src,
                     const std::vector<int64_t> &shape,
                     const std::vector<int64_t> &strides, int64_t esize,
                     cudaStream_t stream) {
  // The walk in bytes: the element's bytes are the innermost dim. Unit dims
  // drop out; a dim merges into the next where it steps over all of it.
  std::vector<int64_t> sizes, steps;
  auto append = [&](int64_t size, int64_t step) {
    if (size == 1)
      return;
    if (!sizes.empty() && steps.back() == step * size) {
      sizes.back() *= size;
      steps.back() = step;
      return;
    }
    sizes.push_back(size);
    steps.push_back(step);
  };
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      return Status::success();
    append(shape[i], strides[i] * esize);
  }
  append(esize, 1);
  if (sizes.empty() || steps.back() != 1) {
    // A 1-byte element's dim drops out as a unit dim, which may leave a
    // strided dim innermost (or none): the innermost dim is a run of one.
    sizes.push_back(1);
    steps.push_back(1);
  }
  int64_t bytes = loom::kernels::product(sizes, 0, sizes.size());
  if (sizes.size() == 1) {
    // One contiguous run.
    cudaError_t error =
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    return error == cudaSuccess ? Status::success()
                                : cudaFailure(error, kernel);
  }
  if (sizes.size() > static_cast<size_t>(kMaxDims))
    return Status::failure(std::string(kernel) + ": " +
                               std::to_string(sizes.size()) +
                               " dims that do not merge are more than the "
                               "CUDA kernel takes (" +
                               std::to_string(kMaxDims) + ")",
                           ErrorCode::Unsupported);
  size_t inner = sizes.size() - 1;
  int64_t unit = widestUnit({sizes[inner]}, {dst, src});
  for (size_t d = 0; d < inner; ++d)
    unit = std::min(unit, widestUnit({steps[d]}, {}));
  Walk walk;
  walk.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    walk.sizes[d] = d == inner ? sizes[d] / unit : sizes[d];
    walk.steps[d] = d == inner ? 1 : steps[d] / unit;
  }
  int64_t count = bytes / unit;
  withUnit(unit, [&](auto tag) {
    using Unit = decltype(tag);
    gatherUnits<Unit><<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<Unit *>(dst), static_cast<const Unit *>(src), count, walk);
  });
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// sum_to
//===----------------------------------------------------------------------===//

/// Summed elements per chunk of the column sums, and the most chunks (and
/// so the most double partials per result element, and in all).
constexpr int64_t kChunkLength = 64;
constexpr int64_t kMaxChunks = 1024;
constexpr int64_t kMaxPartials = int64_t(1) << 22;
/// From this many summed elements per result on, a whole block sums each.
constexpr int64_t kBlockSumLength = 8192;

/// Sums `sum` over the kGroup threads of a group (a warp, or the whole
/// block); lane 0 of the group gets the total. Every thread of the group
/// calls it together.
template <int kGroup> __device__ double groupSum(double sum) {
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if constexpr (kGroup > 32) {
    __shared__ double warpSums[kGroup / 32];
    int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0)
      warpSums[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      sum = 0;
      for (int w = 0; w < kGroup / 32; ++w)
        sum += warpSums[w];
    }
    __syncthreads(); // before the slots are reused
  }
  return sum;
}

/// out[j] = the sum of `length` elements of `in` from offsetOf(j, kept) at
/// offsetOf(k, summed), for k in [0, length); kGroup threads per j.
template <int kGroup>
__global__ void __launch_bounds__(kThreads)
    sumGroups(const float *in, float *out, int64_t outCount, int64_t length,
              Walk kept, Walk summed) {
  constexpr int kGroupsPerBlock = kThreads / kGroup;
  int lane = threadIdx.x % kGroup;
  // The loop's bounds are the same for every thread of a group (for a block
  // group, of the block), so the group's shuffles and barriers line up.
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kGroupsPerBlock +
                   threadIdx.x / kGroup;
       j < outCount; j += static_cast<int64_t>(gridDim.x) * kGroupsPerBlock) {
    const float *base = in + offsetOf(j, kept);
    double sum = 0;
    for (int64_t k = lane; k < length; k += kGroup)
      sum += base[offsetOf(k, summed)];
    sum = groupSum<kGroup>(sum);
    if (lane == 0)
      out[j] = static_cast<float>(sum);
  }
}

/// Task t = p * outCount + j sums chunk p of result element j's `length`
/// elements, in order, into partials[t] (or, with one chunk, into out[j]).
__global__ void __launch_bounds__(kThreads)
    sumColumnChunks(const float *in, float *out, double *partials,
                    int64_t outCount, int64_t length, int64_t chunks, Walk kept,
                    Walk summed) {
  for (int64_t t = firstIndex(); t < chunks * outCount; t += gridStride()) {
    int64_t p = t / outCount, j = t - p * outCount;
    int64_t begin = p * length / chunks, end = (p + 1) * length / chunks;
    const float *base = in + offsetOf(j, kept);
    double sum = 0;
    for (int64_t k = begin; k < end; ++k)
      sum += base[offsetOf(k, summed)];
    if (partials)
      partials[t] = sum;
    else
      out[j] = static_cast<float>(sum);
  }
}

/// out[j] = the sum of partials[p * outCount + j] over p, in order.
__global__ void __launch_bounds__(kThreads)
    addPartials(const double *partials, float *out, int64_t outCount,
                int64_t chunks) {
  for (int64_t j = firstIndex(); j < outCount; j += gridStride()) {
    double sum = 0;
    for (int64_t p = 0; p < chunks; ++p)
      sum += partials[p * outCount + j];
    out[j] = static_cast<float>(sum);
  }
}

/// `dims` and `steps` as a Walk, or a failure past kMaxDims.
Status toWalk(const std::vector<int64_t> &dims,
              const std::vector<int64_t> &steps, Walk &walk) {
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return Status::failure("sum_to: " + std::to_string(dims.size()) +
                               " dims that do not merge are more than the "
                               "CUDA kernel takes (" +
                               std::to_string(kMaxDims) + ")",
                           ErrorCode::Unsupported);
  walk.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    walk.sizes[d] = dims[d];
    walk.steps[d] = steps[d];
  }
  return Status::success();
}

} // namespace

Status loom::cuda::transposeKernel(const CudaKernelCall &call) {
  std::vector<int64_t> shape, strides;
  LOOM_RETURN_IF_ERROR(
      kernels::checkTransposeCall(call.args, call.attrs, shape, strides));
  const TensorRef &in = call.args[0], &out = call.args[1];
  return stridedGather("transpose", out.data, in.data, shape, strides,
                       dtypeSize(in.dtype),
                       static_cast<cudaStream_t>(call.stream));
}

Status loom::cuda::sliceKernel(const CudaKernelCall &call) {
  int64_t dim, start, end;
  LOOM_RETURN_IF_ERROR(
      kernels::checkSliceCall(call.args, call.attrs, dim, start, end));
  const TensorRef &in = call.args[0], &out = call.args[1];
  std::vector<int64_t> shape = in.shape, strides = kernels::stridesOf(in.shape);
  shape[dim] = end - start;
  int64_t esize = dtypeSize(in.dtype);
  const char *src =
      static_cast<const char *>(in.data) + start * strides[dim] * esize;
  // A contiguous slice the executor placed on its operand's bytes.
  if (src == out.data && kernels::product(in.shape, 0, dim) <= 1)
    return Status::success();
  return stridedGather("slice", out.data, src, shape, strides, esize,
                       static_cast<cudaStream_t>(call.stream));
}

Status loom::cuda::sliceGradKernel(const CudaKernelCall &call) {
  int64_t dim, start, end;
  LOOM_RETURN_IF_ERROR(
      kernels::checkSliceGradCall(call.args, call.attrs, dim, start, end));
  const TensorRef &in = call.args[0], &like = call.args[1], &out = call.args[2];
  int64_t count = out.bytes();
  if (count == 0)
    return Status::success();
  // Rows of the dims before `dim`, each [size, inner bytes].
  int64_t inner = kernels::product(like.shape, dim + 1, like.shape.size()) *
                  dtypeSize(out.dtype);
  int64_t rowBytes = like.shape[dim] * inner;
  int64_t unit = widestUnit({inner}, {out.data, in.data});
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  withUnit(unit, [&](auto tag) {
    using Unit = decltype(tag);
    placeSlice<Unit><<<blocksFor(count / unit), kThreads, 0, stream>>>(
        static_cast<Unit *>(out.data), static_cast<const Unit *>(in.data),
        count / unit, rowBytes / unit, start * inner / unit,
        end * inner / unit);
  });
  return launched("slice_grad");
}

Status loom::cuda::concatKernel(const CudaKernelCall &call) {
  int64_t dim;
  LOOM_RETURN_IF_ERROR(kernels::checkConcatCall(call.args, call.attrs, dim));
  const TensorRef &out = call.args.back();
  const std::vector<int64_t> &shape = out.shape;
  int64_t esize = dtypeSize(out.dtype);
  int64_t outer = kernels::product(shape, 0, dim);
  int64_t inner = kernels::product(shape, dim + 1, shape.size()) * esize;
  int64_t outRow = shape[dim] * inner;
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  // Input i fills columns [column, column + chunk) of every result row.
  int64_t column = 0;
  for (size_t i = 0; i + 1 < call.args.size(); ++i) {
    const TensorRef &t = call.args[i];
    int64_t chunk = t.shape[dim] * inner;
    char *dst = static_cast<char *>(out.data) + column;
    column += chunk;
    // An input already in place (an append: the result written over the
    // input's memory, Session::run's appendInto) is not copied onto itself.
    if (chunk == 0 || outer == 0 || (outer == 1 && dst == t.data))
      continue;
    int64_t unit = widestUnit({chunk, outRow}, {dst, t.data});
    int64_t count = outer * chunk / unit;
    withUnit(unit, [&](auto tag) {
      using Unit = decltype(tag);
      copyRows<Unit><<<blocksFor(count), kThreads, 0, stream>>>(
          reinterpret_cast<Unit *>(dst), outRow / unit,
          static_cast<const Unit *>(t.data), chunk / unit, count);
    });
    LOOM_RETURN_IF_ERROR(launched("concat"));
  }
  return Status::success();
}

Status loom::cuda::broadcastAsKernel(const CudaKernelCall &call) {
  std::vector<int64_t> strides;
  LOOM_RETURN_IF_ERROR(
      kernels::checkBroadcastAsCall(call.args, call.attrs, strides));
  const TensorRef &in = call.args[0], &out = call.args[2];
  return stridedGather("broadcast_as", out.data, in.data, out.shape, strides,
                       dtypeSize(in.dtype),
                       static_cast<cudaStream_t>(call.stream));
}

Status loom::cuda::sumToKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkSumToCall(call.args, call.attrs));
  const TensorRef &in = call.args[0], &out = call.args[2];
  const std::vector<int64_t> &shape = out.shape;
  size_t rank = in.shape.size(), lead = rank - shape.size();
  int64_t outCount = out.numel(), inCount = in.numel();
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  if (inCount == 0 || outCount == inCount) {
    // Nothing summed (only unit dims differ), or nothing to sum: a copy,
    // or zeros (0.0f is all zero bits).
    cudaError_t error = cudaSuccess;
    if (inCount == 0 && outCount > 0)
      error = cudaMemsetAsync(out.data, 0, out.bytes(), stream);
    else if (inCount > 0 && in.data != out.data)
      error = cudaMemcpyAsync(out.data, in.data, in.bytes(),
                              cudaMemcpyDeviceToDevice, stream);
    return error == cudaSuccess ? Status::success()
                                : cudaFailure(error, "sum_to");
  }

  // Each input dim is kept or summed; unit dims drop out and neighbours of
  // one kind merge, as on the CPU. A merged dim's step in the input is the
  // product of the merged dims inside it; the result is row-major over the
  // kept dims in input order.
  std::vector<int64_t> dims;
  std::vector<bool> isKept;
  for (size_t i = 0; i < rank; ++i) {
    int64_t size = in.shape[i];
    bool kept = i >= lead && shape[i - lead] != 1;
    if (size == 1)
      continue;
    if (!dims.empty() && isKept.back() == kept) {
      dims.back() *= size;
      continue;
    }
    dims.push_back(size);
    isKept.push_back(kept);
  }
  std::vector<int64_t> inSteps = kernels::stridesOf(dims);
  std::vector<int64_t> keptDims, keptSteps, summedDims, summedSteps;
  for (size_t d = 0; d < dims.size(); ++d) {
    (isKept[d] ? keptDims : summedDims).push_back(dims[d]);
    (isKept[d] ? keptSteps : summedSteps).push_back(inSteps[d]);
  }
  Walk kept, summed;
  LOOM_RETURN_IF_ERROR(toWalk(keptDims, keptSteps, kept));
  LOOM_RETURN_IF_ERROR(toWalk(summedDims, summedSteps, summed));
  int64_t length = inCount / outCount; // summed elements per result
  const float *x = static_cast<const float *>(in.data);
  float *y = static_cast<float *>(out.data);

  if (!isKept.back()) {
    // The innermost dim is summed: a group of threads per result element
    // reads its elements side by side.
    if (length >= kBlockSumLength)
      sumGroups<kThreads>
          <<<blocksFor(outCount * kThreads), kThreads, 0, stream>>>(
              x, y, outCount, length, kept, summed);
    else
      sumGroups<32><<<blocksFor(outCount * 32), kThreads, 0, stream>>>(
          x, y, outCount, length, kept, summed);
    return launched("sum_to");
  }

  // The innermost dim is kept: a thread per result element and chunk, the
  // chunks' count fixed by the shape.
  int64_t chunks = std::clamp<int64_t>(
      (length + kChunkLength - 1) / kChunkLength, 1, kMaxChunks);
  chunks = std::min(chunks, std::max<int64_t>(1, kMaxPartials / outCount));
  double *partials = nullptr;
  if (chunks > 1) {
    cudaError_t error = cudaMallocAsync(
        reinterpret_cast<void **>(&partials),
        static_cast<size_t>(chunks * outCount) * sizeof(double), stream);
    if (error != cudaSuccess)
      return cudaFailure(error, "sum_to");
  }
  sumColumnChunks<<<blocksFor(chunks * outCount), kThreads, 0, stream>>>(
      x, y, partials, outCount, length, chunks, kept, summed);
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess && partials) {
    addPartials<<<blocksFor(outCount), kThreads, 0, stream>>>(partials, y,
                                                              outCount, chunks);
    error = cudaGetLastError();
  }
  if (partials) {
    // Stream-ordered: freed once the kernels above are done with it.
    cudaError_t freed = cudaFreeAsync(partials, stream);
    if (error == cudaSuccess)
      error = freed;
  }
  return error == cudaSuccess ? Status::success()
                              : cudaFailure(error, "sum_to");
}
