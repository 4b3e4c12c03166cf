//===- IndexKernels.cu - Gathers, scatters, masks and positions on the GPU ===//
//
// The CUDA counterparts of runtime/cpu/IndexKernels.cpp, with the same checks
// (runtime/KernelChecks.h) and the same results.
//
// An id outside the table is data, which the host cannot read where it lies.
// gather and scatter_add queue a check beside their work: every thread that
// meets a bad id lowers a device word to its position (atomicMin), so the
// word ends at the first bad position whatever the threads' order. The host
// reads the word back and, when it names a position, the id there, and
// refuses the call with the CPU's message; the kernels skip bad ids, so
// nothing is read or written outside a tensor, and a refused call's result
// is left unspecified. These two kernels therefore wait for the stream; the
// others return as soon as their work is queued.
//
// scatter_add (the embedding gradient) must sum each table row's updates in
// id order, as the CPU does, so that a run repeats bit for bit without float
// atomics. The ids' positions are sorted by id with a stable radix sort
// (CUB's), which keeps each id's positions in order; each table row then
// finds its run of positions, and a thread per element of the result adds
// the run's updates in that order to a float that starts at 0, as the CPU's
// zeroed row does. Consecutive threads take consecutive columns, so the
// updates' rows are read coalesced.
//
// gather copies rows in the widest unit (16, 8, 4, 2 or 1 bytes) that
// divides a row and aligns both tensors, so it takes every dtype. one_hot,
// padding_mask, causal_mask and iota write each result element once, from
// its index alone. Grids are 256-thread blocks, capped at kMaxBlocks, with
// 64-bit indices.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelChecks.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using loom::DType;
using loom::ErrorCode;
using loom::Status;
using loom::cuda::cudaCheck;
using loom::cuda::CudaKernelCall;
using loom::cuda::firstIndex;
using loom::cuda::gridStride;
using loom::cuda::launched;
using loom::cuda::StreamScratch;
using loom::cuda::widestUnit;
using loom::cuda::withUnit;
using loom::runtime::TensorRef;

namespace {

constexpr int kThreads = 256;
/// Enough blocks of kThreads to fill an A100 or H100 several times over;
/// larger problems loop (grid-stride).
constexpr int64_t kMaxBlocks = 4096;
/// The first-bad-position word before any thread lowers it.
constexpr unsigned long long kNoBadId = ~0ull;

unsigned blocksFor(int64_t work) {
  return static_cast<unsigned>(
      std::min<int64_t>(kMaxBlocks, (work + kThreads - 1) / kThreads));
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Lowers *firstBad to the position of every id outside [0, rows).
template <typename Id>
__global__ void __launch_bounds__(kThreads)
    findBadIds(const Id *ids, int64_t count, int64_t rows,
               unsigned long long *firstBad) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t id = ids[i];
    if (id < 0 || id >= rows)
      atomicMin(firstBad, static_cast<unsigned long long>(i));
  }
}

/// dst row r = table row ids[r], rows of `rowUnits` units; a bad id's row
/// is skipped (findBadIds reports it).
template <typename Unit, typename Id>
__global__ void __launch_bounds__(kThreads)
    gatherRows(Unit *dst, const Unit *table, const Id *ids, int64_t rows,
               int64_t rowUnits, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t r = i / rowUnits;
    int64_t id = ids[r];
    if (id >= 0 && id < rows)
      dst[i] = table[id * rowUnits + i - r * rowUnits];
  }
}

/// The sort's input: key i is ids[i], or `rows` (past every table row) for
/// a bad id, whose position lowers *firstBad; value i is i.
template <typename Id>
__global__ void __launch_bounds__(kThreads)
    makeSortKeys(const Id *ids, int64_t count, int64_t rows, uint32_t *keys,
                 int64_t *positions, unsigned long long *firstBad) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t id = ids[i];
    bool bad = id < 0 || id >= rows;
    if (bad)
      atomicMin(firstBad, static_cast<unsigned long long>(i));
    keys[i] = static_cast<uint32_t>(bad ? rows : id);
    positions[i] = i;
  }
}

/// Table row k's positions are sorted[begin[k], end[k]); rows no id names
/// keep the zeros they start with.
__global__ void __launch_bounds__(kThreads)
    findRuns(const uint32_t *sortedKeys, int64_t count, int64_t rows,
             int64_t *begin, int64_t *end) {
  for (int64_t s = firstIndex(); s < count; s += gridStride()) {
    int64_t key = sortedKeys[s];
    if (key >= rows)
      continue; // the bad ids, sorted last
    if (s == 0 || sortedKeys[s - 1] != key)
      begin[key] = s;
    if (s == count - 1 || sortedKeys[s + 1] != key)
      end[key] = s + 1;
  }
}

/// out[r, j] = 0 + updates[p0, j] + updates[p1, j] + ... over the positions
/// of table row r in order, in float as on the CPU.
__global__ void __launch_bounds__(kThreads)
    addRuns(const float *updates, const int64_t *order, const int64_t *begin,
            const int64_t *end, float *out, int64_t row, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t r = i / row, j = i - r * row;
    float sum = 0.0f;
    for (int64_t s = begin[r], stop = end[r]; s < stop; ++s)
      sum += updates[order[s] * row + j];
    out[i] = sum;
  }
}

/// out[i, c] = 1 where ids[i] == c, else 0, over rows of `depth`.
template <typename T, typename Id>
__global__ void __launch_bounds__(kThreads)
    oneHotRows(const Id *ids, T *out, int64_t depth, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t r = i / depth;
    out[i] = static_cast<int64_t>(ids[r]) == i - r * depth ? T(1) : T(0);
  }
}

template <typename Id>
__global__ void __launch_bounds__(kThreads)
    paddingMask(const Id *ids, float *out, int64_t pad, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride())
    out[i] = static_cast<int64_t>(ids[i]) == pad ? loom::kernels::kMaskedScore
                                                 : 0.0f;
}

/// [n, n]: key j is masked for query i when j > i.
__global__ void __launch_bounds__(kThreads)
    causalMask(float *out, int64_t n, int64_t count) {
  for (int64_t i = firstIndex(); i < count; i += gridStride()) {
    int64_t query = i / n, key = i - query * n;
    out[i] = key > query ? loom::kernels::kMaskedScore : 0.0f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) iotaFill(T *out, int64_t n) {
  for (int64_t i = firstIndex(); i < n; i += gridStride())
    out[i] = static_cast<T>(i);
}

//===----------------------------------------------------------------------===//
// Host helpers
//===----------------------------------------------------------------------===//

/// Calls launch(Id{}) with the C++ type of an i32 or i64 id tensor.
template <typename Launch> void withIdType(DType dtype, Launch &&launch) {
  if (dtype == DType::I32)
    return launch(int32_t{});
  return launch(int64_t{});
}

/// Places pieces of scratch memory one after another, each 256-byte
/// aligned.
class Carver {
public:
  template <typename T> size_t add(int64_t count) {
    size_t offset = total;
    total += (static_cast<size_t>(count) * sizeof(T) + 255) / 256 * 256;
    return offset;
  }
  size_t size() const { return total; }

private:
  size_t total = 0;
};

/// Waits for the stream, then refuses the call as the CPU does when
/// *firstBad (device memory) names a position of `ids`.
Status reportBadId(const char *kernel, const unsigned long long *firstBad,
                   const TensorRef &ids, int64_t rows, cudaStream_t stream) {
  unsigned long long position = kNoBadId;
  LOOM_RETURN_IF_ERROR(
      cudaCheck(cudaMemcpyAsync(&position, firstBad, sizeof(position),
                                cudaMemcpyDeviceToHost, stream),
                kernel));
  LOOM_RETURN_IF_ERROR(cudaCheck(cudaStreamSynchronize(stream), kernel));
  if (position == kNoBadId)
    return Status::success();
  int64_t idSize = dtypeSize(ids.dtype), id = 0;
  int32_t id32 = 0;
  void *host = ids.dtype == DType::I32 ? static_cast<void *>(&id32)
                                       : static_cast<void *>(&id);
  LOOM_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpyAsync(host,
                      static_cast<const char *>(ids.data) + position * idSize,
                      idSize, cudaMemcpyDeviceToHost, stream),
      kernel));
  LOOM_RETURN_IF_ERROR(cudaCheck(cudaStreamSynchronize(stream), kernel));
  if (ids.dtype == DType::I32)
    id = id32;
  Status refused = loom::kernels::checkIdInRange(kernel, id, rows);
  if (refused.ok()) // the device and the host disagree about the id
    return Status::failure(std::string(kernel) + ": id " + std::to_string(id) +
                               " at " + std::to_string(position) +
                               " was flagged outside [0, " +
                               std::to_string(rows) + ")",
                           ErrorCode::Internal);
  return refused;
}

/// Bits that hold every value in [0, n].
int bitsFor(int64_t n) {
  int bits = 1;
  while (bits < 63 && (int64_t(1) << bits) <= n)
    ++bits;
  return bits;
}

} // namespace

Status loom::cuda::gatherKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkGatherCall(call.args, call.attrs));
  const TensorRef &table = call.args[0], &ids = call.args[1],
                  &out = call.args[2];
  int64_t count = ids.numel();
  if (count == 0)
    return Status::success();
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  int64_t rows = table.shape[0];
  int64_t rowBytes = kernels::product(table.shape, 1, table.shape.size()) *
                     dtypeSize(table.dtype);
  StreamScratch flag(stream);
  LOOM_RETURN_IF_ERROR(flag.allocate(sizeof(unsigned long long), "gather"));
  auto *firstBad = flag.as<unsigned long long>();
  LOOM_RETURN_IF_ERROR(cudaCheck(
      cudaMemsetAsync(firstBad, 0xff, sizeof(*firstBad), stream), "gather"));
  withIdType(ids.dtype, [&](auto idTag) {
    using Id = decltype(idTag);
    findBadIds<Id><<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<const Id *>(ids.data), count, rows, firstBad);
  });
  LOOM_RETURN_IF_ERROR(launched("gather"));
  if (rowBytes > 0) {
    int64_t unit = widestUnit({rowBytes}, {table.data, out.data});
    int64_t units = count * (rowBytes / unit);
    withUnit(unit, [&](auto unitTag) {
      using Unit = decltype(unitTag);
      withIdType(ids.dtype, [&](auto idTag) {
        using Id = decltype(idTag);
        gatherRows<Unit, Id><<<blocksFor(units), kThreads, 0, stream>>>(
            static_cast<Unit *>(out.data),
            static_cast<const Unit *>(table.data),
            static_cast<const Id *>(ids.data), rows, rowBytes / unit, units);
      });
    });
    LOOM_RETURN_IF_ERROR(launched("gather"));
  }
  return reportBadId("gather", firstBad, ids, rows, stream);
}

Status loom::cuda::scatterAddKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkScatterAddCall(call.args, call.attrs));
  const TensorRef &updates = call.args[0], &ids = call.args[1],
                  &like = call.args[2], &out = call.args[3];
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  int64_t count = ids.numel(), rows = like.shape[0];
  int64_t row = kernels::product(like.shape, 1, like.shape.size());
  if (count == 0) {
    // No ids: nothing to check, and every row is zero.
    if (out.bytes() == 0)
      return Status::success();
    return cudaCheck(cudaMemsetAsync(out.data, 0, out.bytes(), stream),
                     "scatter_add");
  }
  if (rows >= int64_t(UINT32_MAX))
    return Status::failure("scatter_add: " + std::to_string(rows) +
                               " table rows are more than the CUDA kernel "
                               "takes",
                           ErrorCode::Unsupported);
  bool writes = out.numel() > 0;

  // The sort's scratch: CUB says how much it needs for `count` pairs.
  size_t sortBytes = 0;
  int keyBits = bitsFor(rows); // keys lie in [0, rows]
  if (writes)
    LOOM_RETURN_IF_ERROR(cudaCheck(
        cub::DeviceRadixSort::SortPairs(
            nullptr, sortBytes, static_cast<const uint32_t *>(nullptr),
            static_cast<uint32_t *>(nullptr),
            static_cast<const int64_t *>(nullptr),
            static_cast<int64_t *>(nullptr), count, 0, keyBits, stream),
        "scatter_add"));
  Carver carver;
  size_t flagAt = carver.add<unsigned long long>(1);
  size_t keysAt = 0, sortedKeysAt = 0, positionsAt = 0, orderAt = 0, runsAt = 0,
         sortAt = 0;
  if (writes) {
    keysAt = carver.add<uint32_t>(count);
    sortedKeysAt = carver.add<uint32_t>(count);
    positionsAt = carver.add<int64_t>(count);
    orderAt = carver.add<int64_t>(count);
    runsAt = carver.add<int64_t>(2 * rows); // begin, then end
    sortAt = carver.add<char>(static_cast<int64_t>(sortBytes));
  }
  StreamScratch scratch(stream);
  LOOM_RETURN_IF_ERROR(scratch.allocate(carver.size(), "scatter_add"));
  char *base = scratch.as<char>();
  auto *firstBad = reinterpret_cast<unsigned long long *>(base + flagAt);
  LOOM_RETURN_IF_ERROR(
      cudaCheck(cudaMemsetAsync(firstBad, 0xff, sizeof(*firstBad), stream),
                "scatter_add"));
  if (!writes) {
    // An empty result: only the ids are checked.
    withIdType(ids.dtype, [&](auto idTag) {
      using Id = decltype(idTag);
      findBadIds<Id><<<blocksFor(count), kThreads, 0, stream>>>(
          static_cast<const Id *>(ids.data), count, rows, firstBad);
    });
    LOOM_RETURN_IF_ERROR(launched("scatter_add"));
    return reportBadId("scatter_add", firstBad, ids, rows, stream);
  }

  auto *keys = reinterpret_cast<uint32_t *>(base + keysAt);
  auto *sortedKeys = reinterpret_cast<uint32_t *>(base + sortedKeysAt);
  auto *positions = reinterpret_cast<int64_t *>(base + positionsAt);
  auto *order = reinterpret_cast<int64_t *>(base + orderAt);
  int64_t *begin = reinterpret_cast<int64_t *>(base + runsAt);
  int64_t *end = begin + rows;
  LOOM_RETURN_IF_ERROR(
      cudaCheck(cudaMemsetAsync(begin, 0, 2 * rows * sizeof(int64_t), stream),
                "scatter_add"));
  withIdType(ids.dtype, [&](auto idTag) {
    using Id = decltype(idTag);
    makeSortKeys<Id><<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<const Id *>(ids.data), count, rows, keys, positions,
        firstBad);
  });
  LOOM_RETURN_IF_ERROR(launched("scatter_add"));
  // Stable: each id's positions stay in increasing order.
  LOOM_RETURN_IF_ERROR(
      cudaCheck(cub::DeviceRadixSort::SortPairs(base + sortAt, sortBytes, keys,
                                                sortedKeys, positions, order,
                                                count, 0, keyBits, stream),
                "scatter_add"));
  findRuns<<<blocksFor(count), kThreads, 0, stream>>>(sortedKeys, count, rows,
                                                      begin, end);
  LOOM_RETURN_IF_ERROR(launched("scatter_add"));
  int64_t elements = out.numel();
  addRuns<<<blocksFor(elements), kThreads, 0, stream>>>(
      static_cast<const float *>(updates.data), order, begin, end,
      static_cast<float *>(out.data), row, elements);
  LOOM_RETURN_IF_ERROR(launched("scatter_add"));
  return reportBadId("scatter_add", firstBad, ids, rows, stream);
}

Status loom::cuda::oneHotKernel(const CudaKernelCall &call) {
  int64_t depth;
  LOOM_RETURN_IF_ERROR(kernels::checkOneHotCall(call.args, call.attrs, depth));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  int64_t count = out.numel();
  if (count == 0)
    return Status::success();
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  // An id outside [0, depth) (padding, an ignored target) is a zero row.
  withIdType(ids.dtype, [&](auto idTag) {
    using Id = decltype(idTag);
    const Id *idData = static_cast<const Id *>(ids.data);
    if (out.dtype == DType::F64)
      oneHotRows<double, Id><<<blocksFor(count), kThreads, 0, stream>>>(
          idData, static_cast<double *>(out.data), depth, count);
    else
      oneHotRows<float, Id><<<blocksFor(count), kThreads, 0, stream>>>(
          idData, static_cast<float *>(out.data), depth, count);
  });
  return launched("one_hot");
}

Status loom::cuda::paddingMaskKernel(const CudaKernelCall &call) {
  int64_t pad;
  LOOM_RETURN_IF_ERROR(
      kernels::checkPaddingMaskCall(call.args, call.attrs, pad));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  int64_t count = ids.numel();
  if (count == 0)
    return Status::success();
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  withIdType(ids.dtype, [&](auto idTag) {
    using Id = decltype(idTag);
    paddingMask<Id><<<blocksFor(count), kThreads, 0, stream>>>(
        static_cast<const Id *>(ids.data), static_cast<float *>(out.data), pad,
        count);
  });
  return launched("padding_mask");
}

Status loom::cuda::causalMaskKernel(const CudaKernelCall &call) {
  int64_t n;
  LOOM_RETURN_IF_ERROR(kernels::checkCausalMaskCall(call.args, call.attrs, n));
  const TensorRef &out = call.args[1];
  int64_t count = n * n;
  if (count == 0)
    return Status::success();
  causalMask<<<blocksFor(count), kThreads, 0,
               static_cast<cudaStream_t>(call.stream)>>>(
      static_cast<float *>(out.data), n, count);
  return launched("causal_mask");
}

Status loom::cuda::iotaKernel(const CudaKernelCall &call) {
  int64_t n;
  LOOM_RETURN_IF_ERROR(kernels::checkIotaCall(call.args, call.attrs, n));
  const TensorRef &out = call.args[1];
  if (n == 0)
    return Status::success();
  cudaStream_t stream = static_cast<cudaStream_t>(call.stream);
  switch (out.dtype) {
  case DType::F32:
    iotaFill<float><<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<float *>(out.data), n);
    break;
  case DType::F64:
    iotaFill<double><<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<double *>(out.data), n);
    break;
  case DType::I32:
    iotaFill<int32_t><<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<int32_t *>(out.data), n);
    break;
  default: // I64, the last type checkIotaCall allows
    iotaFill<int64_t><<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<int64_t *>(out.data), n);
    break;
  }
  return launched("iota");
}
