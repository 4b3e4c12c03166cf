//===- Kernels.h - The CPU runtime's library kernels ------------*- C++ -*-===//
//
// Every op that is not a generated `loom.fusion` kernel runs as a library
// kernel: GEMMs (BLAS), attention, gathers, transposes, losses. Codegen
// (codegen/cpu/LibraryCalls) turns such an op into a call: the kernel's name,
// its tensor arguments (the op's present operands, then its results) and
// integer and float attributes; the executor resolves the shapes for the
// current call and invokes the kernel by name. The encoding of each kernel's
// attributes is documented beside the kernel and beside its encoder.
//
// Kernels run on the calling thread and may split their work over `pool`.
// A result may alias an operand where the memory plan allows it (in-place
// row-wise ops): such a kernel reads each row before it writes it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELS_H
#define LOOM_RUNTIME_CPU_KERNELS_H

#include "runtime/executable.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cpu {

class ThreadPool;
using DType = runtime::Buffer::DType;

/// Bytes per element of `dtype` (I1 takes one byte).
int64_t dtypeSize(DType dtype);

/// A dense row-major tensor the kernel does not own.
struct TensorRef {
  void *data = nullptr;
  DType dtype = runtime::Buffer::F32;
  std::vector<int64_t> shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  float *f32() const { return static_cast<float *>(data); }
  int32_t *i32() const { return static_cast<int32_t *>(data); }
  int64_t *i64() const { return static_cast<int64_t *>(data); }
};

struct KernelCall {
  std::vector<TensorRef> args; // present operands, then results
  std::vector<int64_t> ints;
  std::vector<double> floats;
  ThreadPool *pool = nullptr;
};

/// Runs one call; returns an empty string on success, otherwise why the
/// inputs were refused (an id out of range, shapes that do not agree). A
/// kernel never crashes on data it can check cheaply.
using LibraryKernel = std::string (*)(const KernelCall &call);

/// The kernel registered under `name`, or nullptr.
LibraryKernel findLibraryKernel(const std::string &name);
/// Every registered name, sorted.
std::vector<std::string> libraryKernelNames();

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_KERNELS_H
