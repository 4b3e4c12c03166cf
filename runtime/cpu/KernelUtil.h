//===- KernelUtil.h - Helpers shared by the library kernels -----*- C++ -*-===//
//
// Private to runtime/cpu: the kernels the registry lists and the small
// checks and messages they share. The attribute layout of each kernel is
// documented once, in codegen/cpu/LibraryCalls.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELUTIL_H
#define LOOM_RUNTIME_CPU_KERNELUTIL_H

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cpu {

// LinearKernels.cpp
std::string linearKernel(const KernelCall &call);
std::string matmulKernel(const KernelCall &call);
// ShapeKernels.cpp
std::string copyKernel(const KernelCall &call);
std::string transposeKernel(const KernelCall &call);
std::string sliceKernel(const KernelCall &call);
std::string sliceGradKernel(const KernelCall &call);
std::string concatKernel(const KernelCall &call);
std::string broadcastAsKernel(const KernelCall &call);
std::string sumToKernel(const KernelCall &call);
// IndexKernels.cpp
std::string gatherKernel(const KernelCall &call);
std::string scatterAddKernel(const KernelCall &call);
std::string oneHotKernel(const KernelCall &call);
std::string paddingMaskKernel(const KernelCall &call);
std::string causalMaskKernel(const KernelCall &call);
std::string iotaKernel(const KernelCall &call);
// LossKernels.cpp
std::string crossEntropyKernel(const KernelCall &call);
std::string crossEntropyGradKernel(const KernelCall &call);

/// Elements per parallel chunk of memory-bound work: large enough that
/// waking a worker costs little beside the chunk.
constexpr int64_t kElementGrain = 16 * 1024;

/// "2x3x4" ("scalar" for rank 0), as the interpreter writes shapes.
std::string shapeString(const std::vector<int64_t> &shape);

/// Row-major strides of `shape`, in elements.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);

/// Runs body(begin, end) over [0, n), split over `pool` when there is one.
template <typename F>
void parallelRange(ThreadPool *pool, int64_t n, int64_t grain, F &&body) {
  if (!pool || pool->size() == 1 || n <= grain) {
    if (n > 0)
      body(int64_t(0), n);
    return;
  }
  pool->parallelFor(n, grain, body);
}

/// "" when `call` has `count` tensors, else a message naming `kernel`.
std::string checkArgCount(const KernelCall &call, size_t count,
                          const char *kernel);
/// "" when `t` holds `dtype`, else a message naming `what`.
std::string checkDType(const TensorRef &t, DType dtype, const char *what);

/// The id at `i` of an i32 or i64 tensor.
inline int64_t idAt(const TensorRef &ids, int64_t i) {
  return ids.dtype == runtime::Buffer::I32 ? ids.i32()[i] : ids.i64()[i];
}
/// "" when `ids` is i32 or i64, else a message naming `what`.
std::string checkIdType(const TensorRef &ids, const char *what);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_KERNELUTIL_H
