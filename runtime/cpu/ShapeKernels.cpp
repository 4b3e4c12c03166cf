//===- ShapeKernels.cpp - Copies, transposes, slices, concats, sum_to -----===//
//
// Transpose, slice and broadcast_as are one strided gather: the result is
// written in order while the source is read at per-dim strides. Before the
// walk, unit dims are dropped and dims that are contiguous in both the
// source and the result are merged, so the innermost loop is as long as it
// can be; when the source is contiguous there too, each result row is one
// memcpy. Multi-head attention's [B, T, H, D] <-> [B, H, T, D] becomes rows
// of D floats. Rows go to the pool; each chunk finds its starting index with
// one division per dim and then steps like an odometer.
//
// Element types are moved as bytes of their size, so these kernels take
// every dtype. sum_to (f32 only) accumulates in double, as the interpreter
// does, and splits rows over the pool with one accumulator per chunk.
// Their attributes are abi::TransposeCall, abi::SliceCall and
// abi::ConcatCall; copy, broadcast_as and sum_to take none.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/KernelUtil.h"

#include <algorithm>
#include <cstring>

using namespace loom::cpu;
using loom::DType;
using loom::ErrorOr;
using loom::Status;

namespace {

/// Copies `n` elements of `E` bytes that lie `stride` elements apart.
template <int64_t E>
void copyStrided(char *dst, const char *src, int64_t n, int64_t stride) {
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(dst + j * E, src + j * stride * E, E);
}

void copyRun(char *dst, const char *src, int64_t n, int64_t stride,
             int64_t esize) {
  if (stride == 1) {
    std::memcpy(dst, src, n * esize);
    return;
  }
  if (stride == 0) {
    // A broadcast row: one element repeated.
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + j * esize, src, esize);
    return;
  }
  switch (esize) {
  case 1:
    return copyStrided<1>(dst, src, n, stride);
  case 2:
    return copyStrided<2>(dst, src, n, stride);
  case 4:
    return copyStrided<4>(dst, src, n, stride);
  case 8:
    return copyStrided<8>(dst, src, n, stride);
  default:
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + j * esize, src + j * stride * esize, esize);
  }
}

/// dst (contiguous, `shape`) = src read at `strides` (elements per step of
/// each dim of `shape`).
void stridedGather(void *dstData, const void *srcData,
                   std::vector<int64_t> shape, std::vector<int64_t> strides,
                   int64_t esize, ThreadPool *pool) {
  // Drop unit dims, then merge a dim into the next where the source steps
  // over the next dim's whole extent.
  std::vector<int64_t> dims, steps;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      return;
    if (shape[i] == 1)
      continue;
    if (!dims.empty() && steps.back() == strides[i] * shape[i]) {
      dims.back() *= shape[i];
      steps.back() = strides[i];
      continue;
    }
    dims.push_back(shape[i]);
    steps.push_back(strides[i]);
  }
  if (dims.empty()) {
    dims.push_back(1);
    steps.push_back(1);
  }
  size_t outer = dims.size() - 1;
  int64_t n = dims.back(), stride = steps.back();
  int64_t rows = product(dims, 0, outer);
  char *dst = static_cast<char *>(dstData);
  const char *src = static_cast<const char *>(srcData);
  int64_t grain = std::max<int64_t>(1, kElementGrain / n);
  parallelRange(pool, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(outer);
    int64_t offset = 0, rest = begin;
    for (size_t d = outer; d-- > 0;) {
      index[d] = rest % dims[d];
      rest /= dims[d];
      offset += index[d] * steps[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      copyRun(dst + r * n * esize, src + offset * esize, n, stride, esize);
      for (size_t d = outer; d-- > 0;) {
        offset += steps[d];
        if (++index[d] < dims[d])
          break;
        offset -= steps[d] * dims[d];
        index[d] = 0;
      }
    }
  });
}

/// memcpy over the pool in large pieces.
void parallelCopy(void *dst, const void *src, int64_t bytes, ThreadPool *pool) {
  constexpr int64_t kBlock = 64 * 1024;
  int64_t blocks = (bytes + kBlock - 1) / kBlock;
  parallelRange(pool, blocks, 4, [&](int64_t begin, int64_t end) {
    int64_t from = begin * kBlock, to = std::min(bytes, end * kBlock);
    std::memcpy(static_cast<char *>(dst) + from,
                static_cast<const char *>(src) + from, to - from);
  });
}

} // namespace

Status loom::cpu::copyKernel(const KernelCall &call) {
  // A view (reshape, reshape_as, expand_dims) with storage of its own, or an
  // output copied out: operand 0 into the last argument, whatever sits in
  // between (reshape_as's `like`).
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("copy", call.attrs));
  if (call.args.size() < 2)
    return Status::failure("copy: expected at least 2 tensor arguments, got " +
                           std::to_string(call.args.size()));
  const TensorRef &in = call.args.front(), &out = call.args.back();
  if (in.bytes() != out.bytes())
    return Status::failure("copy: " + shapeString(in.shape) + " and " +
                           shapeString(out.shape) + " differ in size");
  if (in.data != out.data && in.bytes() > 0)
    parallelCopy(out.data, in.data, in.bytes(), call.pool);
  return Status::success();
}

Status loom::cpu::transposeKernel(const KernelCall &call) {
  std::vector<int64_t> shape, strides;
  LOOM_RETURN_IF_ERROR(
      kernels::checkTransposeCall(call.args, call.attrs, shape, strides));
  const TensorRef &in = call.args[0], &out = call.args[1];
  stridedGather(out.data, in.data, shape, strides, dtypeSize(in.dtype),
                call.pool);
  return Status::success();
}

Status loom::cpu::sliceKernel(const KernelCall &call) {
  int64_t dim, start, end;
  LOOM_RETURN_IF_ERROR(
      kernels::checkSliceCall(call.args, call.attrs, dim, start, end));
  const TensorRef &in = call.args[0], &out = call.args[1];
  std::vector<int64_t> shape = in.shape, strides = stridesOf(in.shape);
  shape[dim] = end - start;
  int64_t esize = dtypeSize(in.dtype);
  const char *src =
      static_cast<const char *>(in.data) + start * strides[dim] * esize;
  // A contiguous slice the executor placed on its operand's bytes.
  if (src == out.data && product(in.shape, 0, dim) <= 1)
    return Status::success();
  stridedGather(out.data, src, shape, strides, esize, call.pool);
  return Status::success();
}

Status loom::cpu::sliceGradKernel(const KernelCall &call) {
  int64_t dim, start, end;
  LOOM_RETURN_IF_ERROR(
      kernels::checkSliceGradCall(call.args, call.attrs, dim, start, end));
  const TensorRef &in = call.args[0], &like = call.args[1], &out = call.args[2];
  int64_t esize = dtypeSize(out.dtype);
  int64_t outer = product(like.shape, 0, dim);
  int64_t inner = product(like.shape, dim + 1, like.shape.size()) * esize;
  int64_t size = like.shape[dim];
  char *dst = static_cast<char *>(out.data);
  const char *src = static_cast<const char *>(in.data);
  int64_t rowBytes = size * inner;
  int64_t grain =
      std::max<int64_t>(1, kElementGrain * 4 / std::max<int64_t>(rowBytes, 1));
  parallelRange(call.pool, outer, grain, [&](int64_t begin, int64_t stop) {
    for (int64_t o = begin; o < stop; ++o) {
      char *row = dst + o * rowBytes;
      std::memset(row, 0, start * inner);
      std::memcpy(row + start * inner, src + o * (end - start) * inner,
                  (end - start) * inner);
      std::memset(row + end * inner, 0, (size - end) * inner);
    }
  });
  return Status::success();
}

Status loom::cpu::concatKernel(const KernelCall &call) {
  int64_t dim;
  LOOM_RETURN_IF_ERROR(kernels::checkConcatCall(call.args, call.attrs, dim));
  size_t numInputs = call.args.size() - 1;
  const TensorRef &out = call.args.back();
  const std::vector<int64_t> &shape = out.shape;
  int64_t esize = dtypeSize(out.dtype);
  int64_t outer = product(shape, 0, dim);
  int64_t inner = product(shape, dim + 1, shape.size()) * esize;
  int64_t outRow = shape[dim] * inner;
  char *dst = static_cast<char *>(out.data);
  int64_t grain =
      std::max<int64_t>(1, kElementGrain * 4 / std::max<int64_t>(outRow, 1));
  parallelRange(call.pool, outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      char *row = dst + o * outRow;
      for (size_t i = 0; i < numInputs; ++i) {
        const TensorRef &t = call.args[i];
        int64_t chunk = t.shape[dim] * inner;
        const char *src = static_cast<const char *>(t.data) + o * chunk;
        // An input already in place (an append: the result written over
        // the input's memory, Session::run's appendInto) is not copied onto
        // itself.
        if (src != row)
          std::memcpy(row, src, chunk);
        row += chunk;
      }
    }
  });
  return Status::success();
}

Status loom::cpu::broadcastAsKernel(const KernelCall &call) {
  std::vector<int64_t> strides;
  LOOM_RETURN_IF_ERROR(
      kernels::checkBroadcastAsCall(call.args, call.attrs, strides));
  const TensorRef &in = call.args[0], &out = call.args[2];
  stridedGather(out.data, in.data, out.shape, strides, dtypeSize(in.dtype),
                call.pool);
  return Status::success();
}

namespace {

/// out[k] = sum over s of in[s * cols + k], for rows [begin, end).
void sumColumns(const float *in, int64_t begin, int64_t end, int64_t cols,
                double *acc) {
  for (int64_t r = begin; r < end; ++r) {
    const float *row = in + r * cols;
    for (int64_t k = 0; k < cols; ++k)
      acc[k] += row[k];
  }
}

} // namespace

Status loom::cpu::sumToKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkSumToCall(call.args, call.attrs));
  const TensorRef &in = call.args[0], &out = call.args[2];
  const std::vector<int64_t> &shape = out.shape;
  size_t rank = in.shape.size(), lead = rank - shape.size();

  // Each input dim is kept (a step of `steps` in the result) or summed (step
  // 0); unit dims drop out and neighbours of one kind merge.
  std::vector<int64_t> outStrides = stridesOf(shape), dims, steps;
  for (size_t i = 0; i < rank; ++i) {
    int64_t size = in.shape[i];
    int64_t step = i >= lead && shape[i - lead] != 1 ? outStrides[i - lead] : 0;
    if (size == 1)
      continue;
    if (!dims.empty() && steps.back() == step * size) {
      dims.back() *= size;
      steps.back() = step;
      continue;
    }
    dims.push_back(size);
    steps.push_back(step);
  }
  int64_t outCount = out.numel(), inCount = in.numel();
  const float *x = in.f32();
  float *y = out.f32();
  if (inCount == 0 || outCount == inCount) {
    // Nothing summed (only unit dims differ), or nothing to sum.
    if (inCount == 0)
      std::fill(y, y + outCount, 0.0f);
    else
      parallelCopy(y, x, inCount * sizeof(float), call.pool);
    return Status::success();
  }
  if (dims.size() == 2 && steps[0] == 0 && steps[1] == 1) {
    // [rows, cols] -> [cols], a bias gradient: each chunk of rows sums into
    // its own accumulator, and the chunks are added in a fixed order.
    int64_t rows = dims[0], cols = dims[1];
    int64_t grainRows = std::max<int64_t>(1, kElementGrain / cols);
    int64_t threads = call.pool ? call.pool->size() : 1;
    int64_t chunks =
        std::max<int64_t>(1, std::min<int64_t>(threads, rows / grainRows));
    std::vector<double> acc(chunks * cols, 0.0);
    parallelRange(call.pool, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        sumColumns(x, c * rows / chunks, (c + 1) * rows / chunks, cols,
                   acc.data() + c * cols);
    });
    for (int64_t k = 0; k < cols; ++k) {
      double s = 0;
      for (int64_t c = 0; c < chunks; ++c)
        s += acc[c * cols + k];
      y[k] = static_cast<float>(s);
    }
    return Status::success();
  }
  // Any other pattern: one accumulator per result element, walked serially
  // (no such sum_to sits in a Transformer's step; they all reduce rows).
  std::vector<double> acc(outCount, 0.0);
  size_t outer = dims.size() - 1;
  int64_t n = dims.back(), step = steps.back();
  std::vector<int64_t> index(outer, 0);
  int64_t offset = 0;
  for (int64_t r = 0, rows = inCount / n; r < rows; ++r) {
    const float *row = x + r * n;
    if (step == 0) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j)
        s += row[j];
      acc[offset] += s;
    } else {
      for (int64_t j = 0; j < n; ++j)
        acc[offset + j * step] += row[j];
    }
    for (size_t d = outer; d-- > 0;) {
      offset += steps[d];
      if (++index[d] < dims[d])
        break;
      offset -= steps[d] * dims[d];
      index[d] = 0;
    }
  }
  for (int64_t i = 0; i < outCount; ++i)
    y[i] = static_cast<float>(acc[i]);
  return Status::success();
}
