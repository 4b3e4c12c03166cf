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

namespace {

/// The additive score that masks a position out (loom::kMaskedScore, which
/// the runtime cannot include): finite, so a fully masked row stays NaN-free.
constexpr float kMaskedScore = -1e9f;

/// Success when every id is in [0, rows), else a message naming the first
/// that is not.
Status checkIds(const TensorRef &ids, int64_t rows, const char *kernel) {
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    int64_t id = idAt(ids, i);
    if (id < 0 || id >= rows)
      return Status::failure(std::string(kernel) + ": id " +
                             std::to_string(id) + " is outside [0, " +
                             std::to_string(rows) + ")");
  }
  return Status::success();
}

/// p[i] = value(i) for i in [0, n), for a result of element type T.
template <typename T> void fill(void *data, int64_t n, T (*value)(int64_t)) {
  T *p = static_cast<T *>(data);
  for (int64_t i = 0; i < n; ++i)
    p[i] = value(i);
}

/// Decodes the AxisCall of causal_mask or iota into the dim of `like` whose
/// size they take.
Status decodeDim(const char *kernel, const KernelCall &call,
                 const TensorRef &like, int64_t &dim) {
  ErrorOr<loom::abi::AxisCall> attrs = loom::abi::AxisCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext(kernel);
  dim = attrs->dim;
  if (dim < 0 || dim >= like.rank())
    return Status::failure(std::string(kernel) + ": dim " +
                           std::to_string(dim) + " is out of range for " +
                           shapeString(like.shape));
  return Status::success();
}

} // namespace

Status loom::cpu::gatherKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 3, "gather"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("gather", call.attrs));
  const TensorRef &table = call.args[0], &ids = call.args[1],
                  &out = call.args[2];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "gather: ids"));
  if (table.rank() < 1 || table.dtype != out.dtype)
    return Status::failure(
        "gather: needs a table of rank 1 or more with the result's "
        "element type, got " +
        shapeString(table.shape));
  std::vector<int64_t> shape = ids.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  if (out.shape != shape)
    return Status::failure("gather: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
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
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 4, "scatter_add"));
  LOOM_RETURN_IF_ERROR(abi::decodeNoAttrs("scatter_add", call.attrs));
  const TensorRef &updates = call.args[0], &ids = call.args[1],
                  &like = call.args[2], &out = call.args[3];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "scatter_add: ids"));
  for (const TensorRef *t : {&updates, &out})
    LOOM_RETURN_IF_ERROR(checkDType(*t, DType::F32, "scatter_add"));
  if (like.rank() < 1)
    return Status::failure("scatter_add: like must have rank 1 or more");
  std::vector<int64_t> expected = ids.shape;
  expected.insert(expected.end(), like.shape.begin() + 1, like.shape.end());
  if (updates.shape != expected)
    return Status::failure("scatter_add: updates " +
                           shapeString(updates.shape) + " do not match ids " +
                           shapeString(ids.shape) + " and rows of " +
                           shapeString(like.shape));
  if (out.shape != like.shape)
    return Status::failure("scatter_add: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(like.shape));
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
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 2, "one_hot"));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "one_hot: ids"));
  ErrorOr<abi::OneHotCall> attrs = abi::OneHotCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("one_hot");
  int64_t depth = attrs->depth;
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(depth);
  if (out.shape != shape)
    return Status::failure("one_hot: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
  int64_t esize = dtypeSize(out.dtype);
  // The byte pattern of 1 in the result's element type.
  unsigned char one[8] = {};
  switch (out.dtype) {
  case DType::F32: {
    float v = 1.0f;
    std::memcpy(one, &v, 4);
    break;
  }
  case DType::F64: {
    double v = 1.0;
    std::memcpy(one, &v, 8);
    break;
  }
  default:
    // The verifier allows float results only; f16 and bf16 are not run here.
    return Status::failure(std::string("one_hot: unsupported result type ") +
                           dtypeName(out.dtype));
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
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 2, "padding_mask"));
  const TensorRef &ids = call.args[0], &out = call.args[1];
  LOOM_RETURN_IF_ERROR(checkIdType(ids, "padding_mask: ids"));
  LOOM_RETURN_IF_ERROR(checkDType(out, DType::F32, "padding_mask"));
  ErrorOr<abi::PaddingMaskCall> attrs =
      abi::PaddingMaskCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("padding_mask");
  if (ids.rank() != 2)
    return Status::failure("padding_mask: ids must be [batch, length], got " +
                           shapeString(ids.shape));
  std::vector<int64_t> shape = {ids.shape[0], 1, 1, ids.shape[1]};
  if (out.shape != shape)
    return Status::failure("padding_mask: result is " + shapeString(out.shape) +
                           ", expected " + shapeString(shape));
  int64_t pad = attrs->pad;
  float *y = out.f32();
  for (int64_t i = 0, n = ids.numel(); i < n; ++i)
    y[i] = idAt(ids, i) == pad ? kMaskedScore : 0.0f;
  return Status::success();
}

Status loom::cpu::causalMaskKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 2, "causal_mask"));
  const TensorRef &like = call.args[0], &out = call.args[1];
  int64_t dim;
  LOOM_RETURN_IF_ERROR(decodeDim("causal_mask", call, like, dim));
  LOOM_RETURN_IF_ERROR(checkDType(out, DType::F32, "causal_mask"));
  int64_t n = like.shape[dim];
  if (out.shape != std::vector<int64_t>{n, n})
    return Status::failure("causal_mask: result is " + shapeString(out.shape) +
                           ", expected " + shapeString({n, n}));
  float *y = out.f32();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = j > i ? kMaskedScore : 0.0f;
  return Status::success();
}

Status loom::cpu::iotaKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 2, "iota"));
  const TensorRef &like = call.args[0], &out = call.args[1];
  int64_t dim;
  LOOM_RETURN_IF_ERROR(decodeDim("iota", call, like, dim));
  int64_t n = like.shape[dim];
  if (out.shape != std::vector<int64_t>{n})
    return Status::failure("iota: result is " + shapeString(out.shape) +
                           ", expected " + shapeString({n}));
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
  case DType::I64:
    fill<int64_t>(out.data, n, [](int64_t i) { return i; });
    return Status::success();
  default:
    return Status::failure(std::string("iota: unsupported result type ") +
                           dtypeName(out.dtype));
  }
}
