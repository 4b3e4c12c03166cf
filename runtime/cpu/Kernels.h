//===- Kernels.h - The CPU runtime's library kernels ------------*- C++ -*-===//
//
// Every op that is not a generated `loom.fusion` kernel runs as a library
// kernel: GEMMs (BLAS), attention, gathers, transposes, losses. Codegen turns
// such an op into a call of the convention in abi/LibraryCalls.h: the
// kernel's name, its tensor arguments (the op's present operands, then its
// results) and its attributes, which each kernel decodes with the struct of
// that header. The CPU device resolves the shapes for the current call and
// invokes the kernel by name.
//
// Kernels run on the calling thread and may split their work over `pool`.
// A result may alias an operand where the memory plan allows it (in-place
// row-wise ops): such a kernel reads each row before it writes it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELS_H
#define LOOM_RUNTIME_CPU_KERNELS_H

#include "abi/LibraryCalls.h"
#include "runtime/Device.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/PackedGemm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cpu {

class ThreadPool;
using runtime::TensorRef;

struct KernelCall {
  /// A view of `call`: the arguments are not copied (a kernel call per step
  /// of decoding copied every TensorRef and its shape).
  KernelCall(const runtime::LibraryCallArgs &call, ThreadPool *pool)
      : args(call.tensors), attrs(call.attrs), versions(call.versions),
        pool(pool) {}

  const std::vector<TensorRef> &args; // present operands, then results
  const abi::CallAttrs &attrs;
  /// Per arg, or empty: runtime::LibraryCallArgs::versions.
  const std::vector<uint64_t> &versions;
  ThreadPool *pool = nullptr;
  /// The executable's packed weights, or nullptr (a call without one).
  PackedWeights *packed = nullptr;
  /// What linear layers over packed weights multiply in.
  LinearPrecision precision = LinearPrecision::F32;

  uint64_t versionOf(size_t arg) const {
    return arg < versions.size() ? versions[arg] : 0;
  }
};

/// Runs one call, or says why the inputs were refused (an id out of range,
/// shapes that do not agree, attributes that do not decode). A kernel never
/// crashes on data it can check cheaply.
using LibraryKernel = Status (*)(const KernelCall &call);

/// The kernel registered under `name`, or nullptr.
LibraryKernel findLibraryKernel(const std::string &name);
/// Every registered name, sorted.
std::vector<std::string> libraryKernelNames();

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_KERNELS_H
