//===- IndexKernels.cpp - Gathers, scatters, masks and positions ----------===//
//
// The kernels that index by ids or by position. Ids are checked before
// anything is written, and a bad one is named with the range it missed, so
// a vocabulary mismatch is an error message rather than a read outside the
// table. scatter_add (the embedding gradient) splits the table's rows, not
// the ids, over the pool: each chunk zeroes its rows and adds the updates
// whose ids fall in them, so no two threads write one row and the sums come
// out in id order whatever the thread count. Their attributes are
// abi::OneHotCall, abi::PaddingMaskCall and abi::AxisCall (causal_mask,
// iota); gather and scatter_add take none.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/KernelUtil.h"

#include <algorithm>
#include <cstring>

using namespace loom::cpu;
using loom::DType;
using loom::ErrorOr;
using loom::Status;
using loom::kernels::kMaskedScore;

namespace {

/// Success when every id is in [0, rows), else a message naming the first
/// that is not.
Status checkIds(const TensorRef &ids, int64_t rows, const char *kernel) {
  for (int64_t i = 0, n = ids.numel(); i < n; ++i)
    LOOM_RETURN_IF_ERROR(
        loom::kernels::checkIdInRange(kernel, idAt(ids, i), rows));
  return Status::success();
}

/// p[i] = value(i) for i in [0, n), for a result of element type T.
template <typename T> void fill(void *data, int64_t n, T (*value)(int64_t)) {
  T *p = static_cast<T *>(data);
  for (int64_t i = 0; i < n; ++i)
    p[i] = value(i);
}

} // namespace

Status loom::cpu::gatherKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkGatherCall(call.args, call.attrs));
  const TensorRef &table = call.args[0], &ids = call.args[1],
                  &out = call.args[2];
  LOOM_RETURN_IF_ERROR(checkIds(ids, table.shape[0], "gather"));
  int64_t row = product(table.shape, 1, table.shape.size());
  int64_t rowBytes = row * dtypeSize(table.dtype);
  const char *src = static_cast<const char *>(table.data);
  char *dst = static_cast<char *>(out.data);
  int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(row, 1));
  parallelRange(call.pool, ids.numel(), grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(dst + i * rowBytes, src + idAt(ids, i) * rowBytes, rowBytes);
  });
  return Status::success();
}

Status loom::cpu::scatterAddKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkScatterAddCall(call.args, call.attrs));
  const TensorRef &updates = call.args[0], &ids = call.args[1],
                  &like = call.args[2], &out = call.args[3];
  int64_t rows = like.shape[0];
  LOOM_RETURN_IF_ERROR(checkIds(ids, rows, "scatter_add"));
  int64_t row = product(like.shape, 1, like.shape.size());
  int64_t count = ids.numel();
  const float *src = updates.f32();
  float *dst = out.f32();
  int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(row, 1));
  parallelRange(call.pool, rows, grain, [&](int64_t begin, int64_t end) {
    std::memset(dst + begin * row, 0, (end - begin) * row * sizeof(float));
    for (int64_t i = 0; i < count; ++i) {
      int64_t id = idAt(ids, i);
      if (id < begin || id >= end)
        continue;
      float *d = dst + id * row;
      const float *s = src + i * row;
      for (int64_t j = 0; j < row; ++j)
        d[j] += s[j];
    }
  });
  return Status::success();
}

Status loom::cpu::oneHotKernel(const KernelCall &call) {
  int64_t depth;
  LOOM_RETURN_IF_ERROR(kernels::checkOneHotCall(call.args, call.attrs, depth));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  int64_t esize = dtypeSize(out.dtype);
  // The byte pattern of 1 in the result's element type, f32 or f64.
  unsigned char one[8] = {};
  if (out.dtype == DType::F64) {
    double v = 1.0;
    std::memcpy(one, &v, 8);
  } else {
    float v = 1.0f;
    std::memcpy(one, &v, 4);
  }
  char *dst = static_cast<char *>(out.data);
  std::memset(dst, 0, out.bytes());
  // An id outside [0, depth) (padding, an ignored target) is a zero row.
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    int64_t id = idAt(ids, i);
    if (id >= 0 && id < depth)
      std::memcpy(dst + (i * depth + id) * esize, one, esize);
  }
  return Status::success();
}

Status loom::cpu::paddingMaskKernel(const KernelCall &call) {
  int64_t pad;
  LOOM_RETURN_IF_ERROR(
      kernels::checkPaddingMaskCall(call.args, call.attrs, pad));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  float *y = out.f32();
  for (int64_t i = 0, n = ids.numel(); i < n; ++i)
    y[i] = idAt(ids, i) == pad ? kMaskedScore : 0.0f;
  return Status::success();
}

Status loom::cpu::causalMaskKernel(const KernelCall &call) {
  int64_t n;
  LOOM_RETURN_IF_ERROR(kernels::checkCausalMaskCall(call.args, call.attrs, n));
  const TensorRef &out = call.args[1];
  float *y = out.f32();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = j > i ? kMaskedScore : 0.0f;
  return Status::success();
}

Status loom::cpu::iotaKernel(const KernelCall &call) {
  int64_t n;
  LOOM_RETURN_IF_ERROR(kernels::checkIotaCall(call.args, call.attrs, n));
  const TensorRef &out = call.args[1];
  switch (out.dtype) {
  case DType::F32:
    fill<float>(out.data, n, [](int64_t i) { return static_cast<float>(i); });
    return Status::success();
  case DType::F64:
    fill<double>(out.data, n, [](int64_t i) { return static_cast<double>(i); });
    return Status::success();
  case DType::I32:
    fill<int32_t>(out.data, n,
                  [](int64_t i) { return static_cast<int32_t>(i); });
    return Status::success();
  default: // I64, the last type checkIotaCall allows
    fill<int64_t>(out.data, n, [](int64_t i) { return i; });
    return Status::success();
  }
}
