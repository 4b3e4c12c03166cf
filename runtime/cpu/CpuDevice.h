//===- CpuDevice.h - The host CPU as a Device -------------------*- C++ -*-===//
//
// Device memory is host memory (64-byte aligned; large blocks are lazily
// mapped pages, kept for reuse when freed: MappedBlocks). An executable's code
// is a shared object, opened from memory (memfd) so no file is left behind; it
// is refused before it is opened when it was compiled for an instruction set
// this CPU lacks. Generated kernels split their rows, and library kernels their
// work, over a pool that is OpenMP's thread team, the same threads the BLAS
// runs on.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_CPUDEVICE_H
#define LOOM_RUNTIME_CPU_CPUDEVICE_H

#include "runtime/Device.h"
#include "runtime/cpu/MappedBlocks.h"
#include "runtime/cpu/ThreadPool.h"

#include <memory>

namespace loom::cpu {

class CpuDevice final : public runtime::Device {
public:
  /// A device with `threads` threads (<= 0: one per hardware thread).
  explicit CpuDevice(int threads = 0);
  ~CpuDevice() override;

  ThreadPool &pool() { return threadPool; }
  int threads() const { return threadPool.size(); }

  std::string name() const override { return "cpu"; }
  runtime::Executable::Target target() const override {
    return runtime::Executable::CPU;
  }
  std::string description() const override;
  bool sharesHostMemory() const override { return true; }

  ErrorOr<void *> allocate(size_t bytes) override;
  ErrorOr<void *> allocateUnspecified(size_t bytes) override;
  void deallocate(void *memory, size_t bytes) override;
  Status copy(void *dst, const void *src, size_t bytes,
              runtime::CopyDirection direction) override;

  ErrorOr<std::unique_ptr<runtime::DeviceCode>>
  loadCode(const runtime::Executable &exe) override;
  Status launch(runtime::DeviceCode &code, int kernel,
                const std::vector<runtime::TensorRef> &args) override;
  Status call(runtime::DeviceCode &code, int kernel,
              const runtime::LibraryCallArgs &args) override;
  Status callLibrary(const std::string &name,
                     const runtime::LibraryCallArgs &args) override;
  Status synchronize() override { return Status::success(); }

  Status gatherRows(const runtime::TensorRef &src,
                    const std::vector<int64_t> &rows,
                    const runtime::TensorRef &dst) override;
  Status moveRows(const runtime::TensorRef &t,
                  const std::vector<int64_t> &from,
                  const std::vector<int64_t> &to) override;
  ErrorOr<std::vector<int32_t>>
  argmax(const runtime::TensorRef &scores) override;
  ErrorOr<TopK> topK(const runtime::TensorRef &scores, int64_t k) override;
  bool ranksLogits() const override { return true; }
  ErrorOr<TopK> topKLogSoftmax(const runtime::TensorRef &logits,
                               int64_t k) override;
  Status editScores(const runtime::TensorRef &scores,
                    const std::vector<ScoreEdit> &edits) override;
  ErrorOr<std::vector<float>>
  readScores(const runtime::TensorRef &scores,
             const std::vector<int64_t> &cells) override;
  ErrorOr<std::vector<float>>
  logSumExp(const runtime::TensorRef &logits) override;

  /// Free blocks this device keeps for reuse, at most this many bytes: a
  /// beam of four over 32 sentences of a 256-wide model holds about 100 MiB
  /// of caches, and batches alternate between two size classes of them.
  /// Kept blocks never make an allocation fail (MappedBlocks.h).
  static constexpr size_t kKeptBlockBytes = size_t(512) << 20;

private:
  ThreadPool threadPool;
  MappedBlocks blocks{kKeptBlockBytes};
};

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_CPUDEVICE_H
