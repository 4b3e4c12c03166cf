//===- CpuModel.h - Running a CPU executable --------------------*- C++ -*-===//
//
// Loads an Executable for the CPU: opens its shared object of generated
// kernels, finds every library kernel, allocates the parameters and the
// optimizer state once, and one arena that the entry points share (they
// never run at once), sized by the plan of the largest that has run. A call
// binds the inputs, derives the named sizes
// (`batch`, `src_len`) from their shapes, checks them against the bounds the
// arena was planned for, evaluates every buffer's shape, and runs the steps.
// Outputs that the plan writes over state (`param.w`, `exp_avg.w`) update the
// state in place; the others come back as tensors.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_CPUMODEL_H
#define LOOM_RUNTIME_CPU_CPUMODEL_H

#include "runtime/Safetensors.h" // ErrorOr
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/executable.pb.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::cpu {

/// A dense row-major tensor with 64-byte aligned storage, zeroed. Large
/// tensors are anonymous mappings, whose pages cost memory only once written
/// (optimizer state that a decoding run never touches stays free).
class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numel() const;
  int64_t bytes() const { return numel() * dtypeSize(type); }
  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  float *f32() { return static_cast<float *>(data()); }
  const float *f32() const { return static_cast<const float *>(data()); }
  TensorRef ref() const;

private:
  struct Free {
    Free() : mappedBytes(0) {}
    explicit Free(size_t bytes) : mappedBytes(bytes) {}
    void operator()(char *p) const;
    size_t mappedBytes; // 0: from aligned_alloc
  };
  DType type = runtime::Buffer::F32;
  std::vector<int64_t> dims;
  std::unique_ptr<char, Free> storage;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Seconds and calls per kernel, when profiling is on.
struct KernelProfile {
  std::string kernel;
  int64_t calls = 0;
  double seconds = 0;
};

class CpuModel {
public:
  /// Loads `executable` (validated again here) with a pool of `threads`
  /// (<= 0: one per hardware thread).
  static ErrorOr<std::unique_ptr<CpuModel>> create(runtime::Executable exe,
                                                   int threads);
  ~CpuModel();

  const runtime::Executable &executable() const { return exe; }
  ThreadPool &pool() { return *threadPool; }

  /// Parameters and optimizer state by name (zeroed at load).
  std::vector<std::string> stateNames() const;
  /// The parameters alone (no optimizer state), sorted.
  std::vector<std::string> parameterNames() const;
  Tensor *state(const std::string &name);

  bool hasEntry(const std::string &entry) const;
  /// The names of `entry`'s inputs (the arguments that are not state), in
  /// the order run() takes them.
  std::vector<std::string> inputNames(const std::string &entry) const;

  /// Runs `entry` with one tensor per input, in inputNames() order. Returns
  /// the outputs that are not written over state, in the function's order.
  ErrorOr<std::vector<NamedTensor>> run(const std::string &entry,
                                        const std::vector<TensorRef> &inputs);

  void setProfiling(bool on) { profiling = on; }
  /// Kernels by decreasing time since profiling was turned on.
  std::vector<KernelProfile> profile() const;

private:
  CpuModel() = default;
  std::string load(int threads);
  char *arenaFor(int64_t bytes);

  struct Entry;
  runtime::Executable exe;
  std::unique_ptr<ThreadPool> threadPool;
  void *library = nullptr;
  char *arena = nullptr;
  size_t arenaBytes = 0;
  std::vector<void *> kernelFns; // per kernel: LibraryKernel or generated
  std::map<std::string, int> stateIndex;
  std::vector<Tensor> buffers; // per buffer: state and constants
  std::vector<std::unique_ptr<Entry>> entries;
  bool profiling = false;
  std::vector<KernelProfile> kernelTimes; // per kernel
};

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_CPUMODEL_H
