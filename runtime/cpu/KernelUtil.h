//===- KernelUtil.h - Helpers shared by the library kernels -----*- C++ -*-===//
//
// Private to runtime/cpu: the kernels the registry lists and the small
// checks and messages they share. Each kernel decodes its attributes with the
// struct abi/LibraryCalls.h defines for it; that header documents the layout.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELUTIL_H
#define LOOM_RUNTIME_CPU_KERNELUTIL_H

#include "runtime/KernelChecks.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"

#include "abi/DType.h"
#include "abi/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cpu {

// LinearKernels.cpp
Status linearKernel(const KernelCall &call);
Status matmulKernel(const KernelCall &call);
// ShapeKernels.cpp
Status copyKernel(const KernelCall &call);
Status transposeKernel(const KernelCall &call);
Status sliceKernel(const KernelCall &call);
Status sliceGradKernel(const KernelCall &call);
Status concatKernel(const KernelCall &call);
Status broadcastAsKernel(const KernelCall &call);
Status sumToKernel(const KernelCall &call);
// IndexKernels.cpp
Status gatherKernel(const KernelCall &call);
Status scatterAddKernel(const KernelCall &call);
Status oneHotKernel(const KernelCall &call);
Status paddingMaskKernel(const KernelCall &call);
Status causalMaskKernel(const KernelCall &call);
Status iotaKernel(const KernelCall &call);
// LossKernels.cpp
Status crossEntropyKernel(const KernelCall &call);
Status crossEntropyGradKernel(const KernelCall &call);

/// Elements per parallel chunk of memory-bound work: large enough that
/// waking a worker costs little beside the chunk.
constexpr int64_t kElementGrain = 16 * 1024;

// The checks every device's kernels make (runtime/KernelChecks.h).
using kernels::checkDType;
using kernels::checkIdType;
using kernels::checkSameDType;
using kernels::checkShape;
using kernels::product;
using kernels::shapeString;
using kernels::stridesOf;

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

/// Success when `call` has `count` tensors, else a message naming `kernel`.
Status checkArgCount(const KernelCall &call, size_t count, const char *kernel);

/// The id at `i` of an i32 or i64 tensor.
inline int64_t idAt(const TensorRef &ids, int64_t i) {
  return ids.dtype == DType::I32 ? ids.i32()[i] : ids.i64()[i];
}

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_KERNELUTIL_H
