//===- KernelChecks.h - What every device's kernels check ----*- C++ -*-===//
//
// A library kernel checks its call on the host before it touches memory:
// the number of tensors, their element types, shapes that must agree. The
// CPU and CUDA kernels of one op make the same checks with the same words
// (the conformance suite holds every device to the messages), so the checks
// live here, free of any device. Shapes print as the interpreter writes
// them ("2x3x4", "scalar"), unlike runtime::shapeString ("[2, 3, 4]").
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_KERNELCHECKS_H
#define LOOM_RUNTIME_KERNELCHECKS_H

#include "runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::kernels {

using runtime::TensorRef;

/// "2x3x4" ("scalar" for rank 0).
std::string shapeString(const std::vector<int64_t> &shape);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Success when there are `count` tensors, else a message naming `kernel`.
Status checkArgCount(const std::vector<TensorRef> &args, size_t count,
                     const char *kernel);
/// Success when `t` holds `dtype`, else a message naming `what`.
Status checkDType(const TensorRef &t, DType dtype, const char *what);
/// Success when `ids` is i32 or i64, else a message naming `what`.
Status checkIdType(const TensorRef &ids, const char *what);
/// Success when `a` and `b` hold the same element type.
Status checkSameDType(const TensorRef &a, const TensorRef &b,
                      const char *kernel);
/// Success when result `out` has `shape`.
Status checkShape(const TensorRef &out, const std::vector<int64_t> &shape,
                  const char *kernel);

//===-- Shape, index and mask kernels ---------------------------------===//

//===-- Losses and GEMMs ----------------------------------------------===//

} // namespace loom::kernels

#endif // LOOM_RUNTIME_KERNELCHECKS_H
