//===- KernelRegistry.cpp - Library kernels by name -----------------------===//
//
// A static table sorted by name, so that a lookup is a binary search and
// the names come out sorted without a copy being sorted at each call. The
// names are those of abi::libraryKernelNames(), which codegen emits; a test
// checks that the two lists agree, so a kernel added on one side only fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/AttentionKernels.h"
#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/VecMath.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>

using namespace loom::cpu;
using loom::Status;

namespace {

struct Entry {
  const char *name;
  LibraryKernel kernel;
};

// Sorted by name (strcmp order); a test checks that it stays so.
const Entry kKernels[] = {
    {"attention", attentionForward},
    {"attention_grad", attentionBackward},
    {"broadcast_as", broadcastAsKernel},
    {"causal_mask", causalMaskKernel},
    {"concat", concatKernel},
    {"copy", copyKernel},
    {"cross_entropy", crossEntropyKernel},
    {"cross_entropy_grad", crossEntropyGradKernel},
    {"gather", gatherKernel},
    {"iota", iotaKernel},
    {"linear", linearKernel},
    {"matmul", matmulKernel},
    {"one_hot", oneHotKernel},
    {"padding_mask", paddingMaskKernel},
    {"scatter_add", scatterAddKernel},
    {"slice", sliceKernel},
    {"slice_grad", sliceGradKernel},
    {"sum_to", sumToKernel},
    {"transpose", transposeKernel},
};

} // namespace

LibraryKernel loom::cpu::findLibraryKernel(const std::string &name) {
  const Entry *end = std::end(kKernels);
  const Entry *it =
      std::lower_bound(std::begin(kKernels), end, name,
                       [](const Entry &e, const std::string &key) {
                         return std::strcmp(e.name, key.c_str()) < 0;
                       });
  if (it == end || name != it->name)
    return nullptr;
  return it->kernel;
}

std::vector<std::string> loom::cpu::libraryKernelNames() {
  std::vector<std::string> names;
  for (const Entry &e : kKernels)
    names.push_back(e.name);
  return names;
}

namespace {
std::atomic<bool> avx2Allowed{true};
std::atomic<bool> vnniAllowed{true};
} // namespace

bool loom::cpu::avx2Enabled() {
#if LOOM_HAVE_AVX2_PATH
  static const bool cpuHasIt =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cpuHasIt && avx2Allowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void loom::cpu::setAvx2Enabled(bool enabled) {
  avx2Allowed.store(enabled, std::memory_order_relaxed);
}

bool loom::cpu::vnniEnabled() {
#if LOOM_HAVE_AVX2_PATH
  static const bool cpuHasIt = __builtin_cpu_supports("avx512vnni") &&
                               __builtin_cpu_supports("avx512vl");
  return cpuHasIt && avx2Enabled() &&
         vnniAllowed.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

void loom::cpu::setVnniEnabled(bool enabled) {
  vnniAllowed.store(enabled, std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// Helpers shared by the kernels (KernelUtil.h)
//===----------------------------------------------------------------------===//

Status loom::cpu::checkArgCount(const KernelCall &call, size_t count,
                                const char *kernel) {
  return kernels::checkArgCount(call.args, count, kernel);
}
