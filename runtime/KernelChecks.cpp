//===- KernelChecks.cpp - What every device's library kernels check -------===//

#include "runtime/KernelChecks.h"

namespace loom::kernels {

std::string shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

Status checkArgCount(const std::vector<TensorRef> &args, size_t count,
                     const char *kernel) {
  if (args.size() == count)
    return Status::success();
  return Status::failure(std::string(kernel) + ": expected " +
                         std::to_string(count) + " tensor arguments, got " +
                         std::to_string(args.size()));
}

Status checkDType(const TensorRef &t, DType dtype, const char *what) {
  if (t.dtype == dtype)
    return Status::success();
  return Status::failure(std::string(what) + " has element type " +
                         dtypeName(t.dtype) + ", expected " + dtypeName(dtype));
}

Status checkIdType(const TensorRef &ids, const char *what) {
  if (ids.dtype == DType::I32 || ids.dtype == DType::I64)
    return Status::success();
  return Status::failure(std::string(what) + " must be i32 or i64, got " +
                         dtypeName(ids.dtype));
}

Status checkSameDType(const TensorRef &a, const TensorRef &b,
                      const char *kernel) {
  if (a.dtype == b.dtype)
    return Status::success();
  return Status::failure(std::string(kernel) + ": element types differ (" +
                         dtypeName(a.dtype) + " and " + dtypeName(b.dtype) +
                         ")");
}

Status checkShape(const TensorRef &out, const std::vector<int64_t> &shape,
                  const char *kernel) {
  if (out.shape == shape)
    return Status::success();
  return Status::failure(std::string(kernel) + ": result is " +
                         shapeString(out.shape) + ", expected " +
                         shapeString(shape));
}

//===-- Shape, index and mask kernels ---------------------------------===//

//===-- Losses and GEMMs ----------------------------------------------===//

} // namespace loom::kernels
