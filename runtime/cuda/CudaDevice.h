//===- CudaDevice.h - An NVIDIA GPU as a Device -----------------*- C++ -*-===//
//
// One GPU through the CUDA runtime, with one stream that every kernel,
// library call and copy of this device is queued on, in order. Device
// memory is cudaMalloc'd and zeroed on the stream. An executable's code is
// a cubin, loaded as a CUDA library when the GPU runs it (the same major
// architecture, a minor at least the cubin's), else its PTX, which the
// driver compiles for this GPU; an executable for a newer GPU than this one
// is refused. Generated kernels are launched as their launch record says
// (runtime/executable.proto, CudaLaunch): blocks of the compiled size, a
// grid sized to the domain and the GPU. Library kernels are the CUDA
// versions of abi/LibraryCalls.h's, in runtime/cuda/ beside nothing of the
// compiler.
//
// The header names no CUDA type, so that the rest of the runtime and the
// tools compile without CUDA's headers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDADEVICE_H
#define LOOM_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/Device.h"

#include <memory>

namespace loom::cuda {

class CudaDevice final : public runtime::Device {
public:
  /// GPU `ordinal` of this machine; Unsupported when there is no GPU or no
  /// driver (with the reason CUDA gives), InvalidArgument for an ordinal
  /// past the last GPU.
  static ErrorOr<std::shared_ptr<CudaDevice>> open(int ordinal);
  ~CudaDevice() override;

  std::string name() const override;
  runtime::Executable::Target target() const override {
    return runtime::Executable::CUDA;
  }
  std::string description() const override;
  bool sharesHostMemory() const override { return false; }
  std::string codeTarget() const override;

  ErrorOr<void *> allocate(size_t bytes) override;
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
  Status synchronize() override;

  Status gatherRows(const runtime::TensorRef &src,
                    const std::vector<int64_t> &rows,
                    const runtime::TensorRef &dst) override;
  ErrorOr<std::vector<int32_t>>
  argmax(const runtime::TensorRef &scores) override;
  ErrorOr<TopK> topK(const runtime::TensorRef &scores, int64_t k) override;

  struct State; // the CUDA objects, in CudaDevice.cpp

private:
  explicit CudaDevice(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDADEVICE_H
