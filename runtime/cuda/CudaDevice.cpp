//===- CudaDevice.cpp - An NVIDIA GPU as a Device -------------------------===//

#include "runtime/cuda/CudaDevice.h"
#include "runtime/KernelChecks.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

namespace loom::cuda {

using runtime::CopyDirection;
using runtime::Executable;
using runtime::Kernel;
using runtime::TensorRef;

namespace {

/// sm_90 -> 90; -1 for anything else (the loader checked the form).
int archNumber(const std::string &arch) {
  if (arch.size() < 4 || arch.compare(0, 3, "sm_") != 0)
    return -1;
  return std::atoi(arch.c_str() + 3);
}

/// An executable's kernels resolved on this GPU.
struct CudaCode final : runtime::DeviceCode {
  // The image the library was loaded from, kept while it is loaded: with
  // lazy loading (CUDA's default) a kernel may be read from it on first use.
  std::string image;
  cudaLibrary_t library = nullptr;
  std::vector<cudaKernel_t> generated; // by kernel index; null for library
  std::vector<CudaLibraryKernel> libraryKernels; // by kernel index
  std::vector<runtime::CudaLaunch> launches;     // by kernel index
  ~CudaCode() override {
    if (library)
      cudaLibraryUnload(library);
  }
};

/// Blocks per multiprocessor a grid-stride launch asks for: enough to hide
/// memory latency, few enough that each thread loops over several elements.
constexpr int64_t kBlocksPerSm = 8;

} // namespace

struct CudaDevice::State {
  int ordinal = 0;
  std::string gpuName;
  int arch = 0; // major * 10 + minor
  int multiprocessors = 1;
  size_t memoryBytes = 0;
  cudaStream_t stream = nullptr;

  Status activate() const {
    LOOM_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal), "cudaSetDevice");
    return Status::success();
  }
};

ErrorOr<std::shared_ptr<CudaDevice>> CudaDevice::open(int ordinal) {
  // The driver first: CUDA reports a missing one as "insufficient".
  int driver = 0, runtimeVersion = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtimeVersion);
  auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  if (driver == 0)
    return Status::failure("no CUDA GPU is available: this machine has no "
                           "NVIDIA driver",
                           ErrorCode::Unsupported);
  if (driver < runtimeVersion)
    return Status::failure("no CUDA GPU is available: the NVIDIA driver "
                           "supports CUDA " +
                               version(driver) + ", this runtime needs CUDA " +
                               version(runtimeVersion),
                           ErrorCode::Unsupported);
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0)
    return Status::failure(std::string("no CUDA GPU is available: ") +
                               (error != cudaSuccess
                                    ? cudaGetErrorString(error)
                                    : "the driver reports no device"),
                           ErrorCode::Unsupported);
  if (ordinal < 0 || ordinal >= count)
    return Status::failure("there is no CUDA GPU " + std::to_string(ordinal) +
                               " (this machine has " + std::to_string(count) +
                               ")",
                           ErrorCode::InvalidArgument);
  auto state = std::make_unique<State>();
  state->ordinal = ordinal;
  LOOM_RETURN_IF_ERROR(state->activate());
  cudaDeviceProp props;
  LOOM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&props, ordinal),
                            "cudaGetDeviceProperties");
  state->gpuName = props.name;
  state->arch = props.major * 10 + props.minor;
  state->multiprocessors = std::max(1, props.multiProcessorCount);
  state->memoryBytes = props.totalGlobalMem;
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking),
      "cudaStreamCreate");
  return std::shared_ptr<CudaDevice>(new CudaDevice(std::move(state)));
}

CudaDevice::CudaDevice(std::unique_ptr<State> state)
    : state(std::move(state)) {}

CudaDevice::~CudaDevice() {
  if (state->stream) {
    cudaSetDevice(state->ordinal);
    cudaStreamSynchronize(state->stream);
    cudaStreamDestroy(state->stream);
  }
}

std::string CudaDevice::name() const {
  return "cuda:" + std::to_string(state->ordinal);
}

std::string CudaDevice::codeTarget() const {
  return "sm_" + std::to_string(state->arch);
}

std::string CudaDevice::description() const {
  return state->gpuName + " (sm_" + std::to_string(state->arch) + ", " +
         std::to_string(state->multiprocessors) + " SMs, " +
         std::to_string(state->memoryBytes >> 20) + " MiB)";
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

ErrorOr<void *> CudaDevice::allocate(size_t bytes) {
  LOOM_RETURN_IF_ERROR(state->activate());
  void *memory = nullptr;
  cudaError_t error = cudaMalloc(&memory, std::max<size_t>(bytes, 1));
  if (error != cudaSuccess) {
    cudaGetLastError(); // an allocation failure is not sticky: clear it
    return Status::failure("cannot allocate " + std::to_string(bytes) +
                               " bytes on " + name() + ": " +
                               cudaGetErrorString(error),
                           ErrorCode::OutOfMemory);
  }
  // Zeroed in stream order: every later use of the memory is on the stream.
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(memory, 0, std::max<size_t>(bytes, 1), state->stream),
      "cudaMemsetAsync");
  return memory;
}

void CudaDevice::deallocate(void *memory, size_t) {
  if (!memory)
    return;
  cudaSetDevice(state->ordinal);
  // Work queued on the memory must finish before it can be reused.
  cudaStreamSynchronize(state->stream);
  cudaFree(memory);
}

Status CudaDevice::copy(void *dst, const void *src, size_t bytes,
                        CopyDirection direction) {
  if (bytes == 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(state->activate());
  cudaMemcpyKind kind =
      direction == CopyDirection::HostToDevice   ? cudaMemcpyHostToDevice
      : direction == CopyDirection::DeviceToHost ? cudaMemcpyDeviceToHost
                                                 : cudaMemcpyDeviceToDevice;
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, kind, state->stream), "cudaMemcpyAsync");
  // The host reads what came back, or may reuse what it sent.
  if (direction != CopyDirection::DeviceToDevice)
    LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(state->stream),
                              "copy between host and " + name());
  return Status::success();
}

Status CudaDevice::synchronize() {
  LOOM_RETURN_IF_ERROR(state->activate());
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(state->stream),
                            "work on " + name());
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Code
//===----------------------------------------------------------------------===//

ErrorOr<std::unique_ptr<runtime::DeviceCode>>
CudaDevice::loadCode(const Executable &exe) {
  if (exe.target() != Executable::CUDA)
    return Status::failure("the executable targets " +
                               Executable::Target_Name(exe.target()) +
                               ", not CUDA",
                           ErrorCode::Unsupported);
  LOOM_RETURN_IF_ERROR(state->activate());
  auto code = std::make_unique<CudaCode>();
  bool anyGenerated = false;
  for (const Kernel &kernel : exe.kernels())
    anyGenerated |= kernel.kind() == Kernel::GENERATED;
  if (anyGenerated) {
    // SASS runs on GPUs of its major architecture from its minor on; PTX is
    // compiled by the driver for any later GPU.
    int compiled = archNumber(exe.cuda_target().arch());
    if (compiled < 0 || compiled > state->arch)
      return Status::failure("the executable was compiled for " +
                                 exe.cuda_target().arch() + "; this GPU (" +
                                 state->gpuName + ") is sm_" +
                                 std::to_string(state->arch),
                             ErrorCode::Unsupported);
    bool sass = compiled / 10 == state->arch / 10;
    // PTX is text, which the driver reads up to its NUL (c_str's).
    code->image = sass ? exe.code() : exe.cuda_target().ptx();
    cudaError_t error =
        cudaLibraryLoadData(&code->library, code->image.c_str(), nullptr,
                            nullptr, 0, nullptr, nullptr, 0);
    if (error != cudaSuccess)
      return Status::failure(std::string("cannot load the executable's ") +
                                 (sass ? "cubin" : "PTX") + " on " +
                                 state->gpuName + ": " +
                                 cudaGetErrorString(error),
                             ErrorCode::Unsupported);
  }
  for (const Kernel &kernel : exe.kernels()) {
    cudaKernel_t generated = nullptr;
    CudaLibraryKernel library = nullptr;
    if (kernel.kind() == Kernel::COLLECTIVE) {
      // The session runs these through its Collectives.
    } else if (kernel.kind() == Kernel::GENERATED) {
      if (cudaLibraryGetKernel(&generated, code->library,
                               kernel.symbol().c_str()) != cudaSuccess) {
        cudaGetLastError();
        return Status::failure("kernel '" + kernel.name() + "': symbol '" +
                                   kernel.symbol() +
                                   "' is not in the executable's code",
                               ErrorCode::Corrupt);
      }
    } else {
      library = findCudaLibraryKernel(kernel.symbol());
      if (!library)
        return Status::failure("kernel '" + kernel.name() +
                                   "': this runtime has no CUDA library "
                                   "kernel '" +
                                   kernel.symbol() + "'",
                               ErrorCode::Unsupported);
    }
    code->generated.push_back(generated);
    code->libraryKernels.push_back(library);
    code->launches.push_back(kernel.cuda_launch());
  }
  return std::unique_ptr<runtime::DeviceCode>(std::move(code));
}

Status CudaDevice::launch(runtime::DeviceCode &deviceCode, int kernel,
                          const std::vector<TensorRef> &args) {
  auto &code = static_cast<CudaCode &>(deviceCode);
  const runtime::CudaLaunch &launch = code.launches[kernel];
  auto [rows, cols] = runtime::kernelDomain(args);
  if (rows <= 0 || cols <= 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(state->activate());
  // The kernel's parameters: every tensor's address, then every tensor's
  // dims, each passed by value (GpuRegionLowering.h).
  thread_local std::vector<void *> pointers;
  thread_local std::vector<int64_t> dims;
  thread_local std::vector<void *> params;
  pointers.clear();
  dims.clear();
  params.clear();
  for (const TensorRef &arg : args) {
    pointers.push_back(arg.data);
    dims.insert(dims.end(), arg.shape.begin(), arg.shape.end());
  }
  for (void *&pointer : pointers)
    params.push_back(&pointer);
  for (int64_t &dim : dims)
    params.push_back(&dim);

  int64_t threads = launch.block_threads();
  int64_t most = kBlocksPerSm * state->multiprocessors;
  int64_t grid = 1;
  switch (launch.shape()) {
  case runtime::CudaLaunch::ELEMENTS:
    grid = std::min(most, (rows * cols + threads - 1) / threads);
    break;
  case runtime::CudaLaunch::ROWS:
    grid = std::min(most, rows);
    break;
  default: // BLOCK: one block takes every row, in order
    grid = 1;
  }
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaLaunchKernel(reinterpret_cast<const void *>(code.generated[kernel]),
                       dim3(static_cast<unsigned>(grid)),
                       dim3(static_cast<unsigned>(threads)), params.data(), 0,
                       state->stream),
      "launching a generated kernel on " + name());
  return Status::success();
}

Status CudaDevice::call(runtime::DeviceCode &deviceCode, int kernel,
                        const runtime::LibraryCallArgs &args) {
  auto &code = static_cast<CudaCode &>(deviceCode);
  LOOM_RETURN_IF_ERROR(state->activate());
  CudaKernelCall call;
  call.args = args.tensors;
  call.attrs = args.attrs;
  call.stream = state->stream;
  return code.libraryKernels[kernel](call);
}

Status CudaDevice::callLibrary(const std::string &kernelName,
                               const runtime::LibraryCallArgs &args) {
  CudaLibraryKernel kernel = findCudaLibraryKernel(kernelName);
  if (!kernel)
    return Status::failure("this runtime has no CUDA library kernel '" +
                               kernelName + "'",
                           ErrorCode::NotFound);
  LOOM_RETURN_IF_ERROR(state->activate());
  CudaKernelCall call;
  call.args = args.tensors;
  call.attrs = args.attrs;
  call.stream = state->stream;
  return kernel(call);
}

//===----------------------------------------------------------------------===//
// Primitives for decoding
//===----------------------------------------------------------------------===//

Status CudaDevice::gatherRows(const TensorRef &src,
                              const std::vector<int64_t> &rows,
                              const TensorRef &dst) {
  LOOM_RETURN_IF_ERROR(kernels::checkGatherRows(src, rows, dst));
  if (rows.empty() || src.bytes() == 0)
    return Status::success();
  LOOM_RETURN_IF_ERROR(state->activate());
  int64_t rowBytes = src.bytes() / src.shape[0];
  StreamScratch indices(state->stream);
  LOOM_RETURN_IF_ERROR(
      indices.allocate(rows.size() * sizeof(int64_t), "gatherRows"));
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(indices.as(), rows.data(), rows.size() * sizeof(int64_t),
                      cudaMemcpyHostToDevice, state->stream),
      "gatherRows");
  // The row list lives on the host stack of the caller: wait for it to be
  // read before returning.
  LOOM_RETURN_IF_ERROR(gatherRowsOnDevice(
      src.data, rowBytes, indices.as<const int64_t>(),
      static_cast<int64_t>(rows.size()), dst.data, state->stream));
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(state->stream), "gatherRows");
  return Status::success();
}

ErrorOr<std::vector<int32_t>> CudaDevice::argmax(const TensorRef &scores) {
  LOOM_RETURN_IF_ERROR(kernels::checkScores(scores, "argmax"));
  LOOM_RETURN_IF_ERROR(state->activate());
  int64_t rows = scores.shape[0], n = scores.shape[1];
  std::vector<int32_t> out(rows);
  if (rows == 0)
    return out;
  StreamScratch result(state->stream);
  LOOM_RETURN_IF_ERROR(result.allocate(rows * sizeof(int32_t), "argmax"));
  LOOM_RETURN_IF_ERROR(argmaxOnDevice(static_cast<const float *>(scores.data),
                                      rows, n, result.as<int32_t>(),
                                      state->stream));
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.data(), result.as(), rows * sizeof(int32_t),
                      cudaMemcpyDeviceToHost, state->stream),
      "argmax");
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(state->stream), "argmax");
  return out;
}

ErrorOr<runtime::Device::TopK> CudaDevice::topK(const TensorRef &scores,
                                                int64_t k) {
  LOOM_RETURN_IF_ERROR(kernels::checkTopK(scores, k));
  int64_t rows = scores.shape[0], n = scores.shape[1];
  LOOM_RETURN_IF_ERROR(state->activate());
  TopK out;
  out.values.resize(rows * k);
  out.indices.resize(rows * k);
  if (rows == 0)
    return out;
  size_t valueBytes = rows * k * sizeof(float);
  StreamScratch result(state->stream);
  LOOM_RETURN_IF_ERROR(
      result.allocate(valueBytes + rows * k * sizeof(int32_t), "topK"));
  auto *values = result.as<float>();
  auto *indices = reinterpret_cast<int32_t *>(result.as<char>() + valueBytes);
  LOOM_RETURN_IF_ERROR(topKOnDevice(static_cast<const float *>(scores.data),
                                    rows, n, k, values, indices,
                                    state->stream));
  LOOM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.values.data(), values,
                                            valueBytes, cudaMemcpyDeviceToHost,
                                            state->stream),
                            "topK");
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.indices.data(), indices, rows * k * sizeof(int32_t),
                      cudaMemcpyDeviceToHost, state->stream),
      "topK");
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(state->stream), "topK");
  return out;
}

} // namespace loom::cuda
