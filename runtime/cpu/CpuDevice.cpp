//===- CpuDevice.cpp - The host CPU as a Device ---------------------------===//

#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/TopK.h"

#include "runtime/KernelChecks.h"
#include "runtime/cpu/CpuFeatures.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/VecMath.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace loom::cpu {

using runtime::Executable;
using runtime::Kernel;
using runtime::TensorRef;

namespace {

/// The code of one executable: its shared object and every kernel resolved.
struct CpuCode final : runtime::DeviceCode {
  void *library = nullptr;
  /// The memfd the library was opened from, open while it is loaded.
  int fd = -1;
  std::vector<void *> functions; // per kernel
  std::vector<bool> parallel;    // per kernel: rows may be split
  std::vector<std::string> names;
  /// Weights its linear layers keep packed between calls, and what they
  /// multiply in (CpuTarget.linear_precision).
  PackedWeights packed;
  LinearPrecision precision = LinearPrecision::F32;
  bool shareCachesOf(runtime::DeviceCode &other) override {
    auto *cpu = dynamic_cast<CpuCode *>(&other);
    if (!cpu)
      return false;
    packed.shareWeightsOf(cpu->packed);
    return true;
  }
  ~CpuCode() override {
    if (library)
      dlclose(library);
    if (fd >= 0)
      ::close(fd);
  }
};

/// The precision an executable's CpuTarget names, if this machine can run
/// it: bf16 only where the CPU has AVX512-BF16 (elsewhere its products would
/// be emulated, slower than f32), or where a test asks for the emulation
/// (LOOM_CPU_EMULATE_BF16).
ErrorOr<LinearPrecision> linearPrecisionOf(const std::string &name) {
  ErrorOr<LinearPrecision> precision = parseLinearPrecision(name);
  if (!precision)
    return precision.status().withContext("the executable");
  std::vector<std::string> features = hostCpuFeatures();
  if (*precision == LinearPrecision::BF16 && !bf16EmulationAllowed() &&
      std::find(features.begin(), features.end(), "avx512bf16") ==
          features.end())
    return Status::failure("the executable multiplies in bf16, which needs "
                           "a CPU with AVX512-BF16; this one has none "
                           "(compile it with --precision fp32 or int8)",
                           ErrorCode::Unsupported);
  return precision;
}

/// Opens `code` as a shared object without leaving a file behind, from a
/// memfd that `fd` keeps open while the library is loaded: the dynamic
/// loader knows a library by its path, /proc/self/fd/N, and would hand out
/// the first executable's code again for a second opened from a reused N.
ErrorOr<void *> openSharedObject(const std::string &code, int &fdOut) {
  int fd = memfd_create("loom-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return Status::failure(std::string("memfd_create failed: ") +
                               std::strerror(errno),
                           ErrorCode::Io);
  size_t written = 0;
  while (written < code.size()) {
    ssize_t n = ::write(fd, code.data() + written, code.size() - written);
    if (n <= 0) {
      Status failed =
          Status::failure(std::string("cannot write the kernels' code: ") +
                              std::strerror(errno),
                          ErrorCode::Io);
      ::close(fd);
      return failed;
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    ::close(fd);
    return Status::failure(std::string("cannot load the kernels' code: ") +
                               dlerror(),
                           ErrorCode::Corrupt);
  }
  fdOut = fd;
  return handle;
}

/// Whether `address` lies in the object `library` (a dlopen handle), not
/// in one of the objects it depends on.
bool definedIn(void *library, void *address) {
  struct link_map *own = nullptr;
  if (dlinfo(library, RTLD_DI_LINKMAP, &own) != 0 || !own)
    return false;
  Dl_info info;
  struct link_map *found = nullptr;
  if (!dladdr1(address, &info, reinterpret_cast<void **>(&found),
               RTLD_DL_LINKMAP))
    return false;
  return found == own;
}

/// Elements per task below which splitting costs more than it saves.
constexpr int64_t kParallelElements = 16384;

} // namespace

CpuDevice::CpuDevice(int threads) : threadPool(threads) {
  setBlasThreads(threadPool.size());
}

CpuDevice::~CpuDevice() = default;

std::string CpuDevice::description() const {
  return "CPU, " + std::to_string(threadPool.size()) + " thread" +
         (threadPool.size() == 1 ? "" : "s") + ", BLAS " + blasName() +
         (avx2Enabled() ? ", AVX2 kernels" : "");
}

ErrorOr<void *> CpuDevice::allocate(size_t bytes) {
  return blocks.allocate(bytes);
}

ErrorOr<void *> CpuDevice::allocateUnspecified(size_t bytes) {
  return blocks.allocate(bytes, runtime::Fill::Unspecified);
}

void CpuDevice::deallocate(void *memory, size_t bytes) {
  blocks.release(memory, bytes);
}

Status CpuDevice::copy(void *dst, const void *src, size_t bytes,
                       runtime::CopyDirection) {
  if (bytes)
    std::memmove(dst, src, bytes);
  return Status::success();
}

ErrorOr<std::unique_ptr<runtime::DeviceCode>>
CpuDevice::loadCode(const Executable &exe) {
  if (exe.target() != Executable::CPU)
    return Status::failure("the executable targets " +
                               Executable::Target_Name(exe.target()) +
                               ", not CPU",
                           ErrorCode::Unsupported);
  // Before the code is opened: code for a richer instruction set would die
  // of SIGILL somewhere in the first step instead.
  LOOM_RETURN_IF_ERROR(checkCpuTarget(exe.cpu_target()));
  auto code = std::make_unique<CpuCode>();
  ErrorOr<LinearPrecision> precision =
      linearPrecisionOf(exe.cpu_target().linear_precision());
  if (!precision)
    return precision.status();
  code->precision = *precision;
  bool generated = false;
  for (const Kernel &kernel : exe.kernels())
    generated |= kernel.kind() == Kernel::GENERATED;
  if (generated) {
    ErrorOr<void *> library = openSharedObject(exe.code(), code->fd);
    if (!library)
      return library.status();
    code->library = *library;
  }
  for (const Kernel &kernel : exe.kernels()) {
    void *fn = nullptr;
    if (kernel.kind() == Kernel::COLLECTIVE) {
      // The session runs these through its Collectives.
    } else if (kernel.kind() == Kernel::GENERATED) {
      fn = dlsym(code->library, kernel.symbol().c_str());
      // dlsym also finds what the code's own dependencies define (the C
      // library's functions): only the code's own symbols are kernels.
      if (fn && !definedIn(code->library, fn))
        fn = nullptr;
      if (!fn)
        return Status::failure("kernel '" + kernel.name() + "': symbol '" +
                                   kernel.symbol() +
                                   "' is not in the executable's code",
                               ErrorCode::Corrupt);
    } else {
      fn = reinterpret_cast<void *>(findLibraryKernel(kernel.symbol()));
      if (!fn)
        return Status::failure("kernel '" + kernel.name() +
                                   "': this runtime has no library kernel '" +
                                   kernel.symbol() + "'",
                               ErrorCode::Unsupported);
    }
    code->functions.push_back(fn);
    code->parallel.push_back(kernel.parallel());
    code->names.push_back(kernel.name());
  }
  return std::unique_ptr<runtime::DeviceCode>(std::move(code));
}

Status CpuDevice::launch(runtime::DeviceCode &deviceCode, int kernel,
                         const std::vector<TensorRef> &args) {
  auto &code = static_cast<CpuCode &>(deviceCode);
  auto fn = reinterpret_cast<abi::GeneratedKernelFn>(code.functions[kernel]);
  // Every generated kernel of every step comes through here: the argument
  // arrays keep their memory from one launch to the next (per thread, as
  // sessions on one device may run in parallel).
  thread_local std::vector<void *> pointers;
  thread_local std::vector<int64_t> dims;
  pointers.clear();
  dims.clear();
  for (const TensorRef &arg : args) {
    pointers.push_back(arg.data);
    dims.insert(dims.end(), arg.shape.begin(), arg.shape.end());
  }
  auto [rows, cols] = runtime::kernelDomain(args);
  if (rows <= 0 || cols <= 0)
    return Status::success();
  // The workers see their own thread_locals: hand them this thread's.
  void *const *argv = pointers.data();
  const int64_t *dimv = dims.data();
  if (code.parallel[kernel] && rows * cols >= 2 * kParallelElements) {
    int64_t grain = std::max<int64_t>(1, kParallelElements / cols);
    threadPool.parallelFor(rows, grain,
                           [&](int64_t b, int64_t e) { fn(argv, dimv, b, e); });
  } else {
    fn(argv, dimv, 0, rows);
  }
  return Status::success();
}

Status CpuDevice::call(runtime::DeviceCode &deviceCode, int kernel,
                       const runtime::LibraryCallArgs &args) {
  auto &code = static_cast<CpuCode &>(deviceCode);
  KernelCall call(args, &threadPool);
  call.packed = &code.packed;
  call.precision = code.precision;
  // The BLAS thread count is process-wide; each device sets its own before
  // its kernels run, so two devices of different sizes do not share one.
  setBlasThreads(threadPool.size());
  return reinterpret_cast<LibraryKernel>(code.functions[kernel])(call);
}

Status CpuDevice::callLibrary(const std::string &name,
                              const runtime::LibraryCallArgs &args) {
  LibraryKernel kernel = findLibraryKernel(name);
  if (!kernel)
    return Status::failure("this runtime has no library kernel '" + name + "'",
                           ErrorCode::NotFound);
  KernelCall call(args, &threadPool);
  setBlasThreads(threadPool.size());
  return kernel(call);
}

Status CpuDevice::gatherRows(const TensorRef &src,
                             const std::vector<int64_t> &rows,
                             const TensorRef &dst) {
  LOOM_RETURN_IF_ERROR(kernels::checkGatherRows(src, rows, dst));
  int64_t rowBytes = src.shape[0] ? src.bytes() / src.shape[0] : 0;
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<char *>(dst.data) + i * rowBytes,
                static_cast<const char *>(src.data) + rows[i] * rowBytes,
                rowBytes);
  return Status::success();
}

Status CpuDevice::moveRows(const TensorRef &t, const std::vector<int64_t> &from,
                           const std::vector<int64_t> &to) {
  LOOM_RETURN_IF_ERROR(kernels::checkMoveRows(t, from, to));
  if (t.bytes() == 0)
    return Status::success();
  int64_t rowBytes = t.bytes() / t.shape[0];
  char *base = static_cast<char *>(t.data);
  // Memory-bound: both threads issue loads, which one core's misses do not
  // keep the memory busy with.
  threadPool.parallelFor(
      static_cast<int64_t>(from.size()),
      std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(rowBytes, 1)),
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(base + to[i] * rowBytes, base + from[i] * rowBytes,
                      rowBytes);
      });
  return Status::success();
}

ErrorOr<std::vector<int32_t>> CpuDevice::argmax(const TensorRef &scores) {
  LOOM_RETURN_IF_ERROR(kernels::checkScores(scores, "argmax"));
  int64_t rows = scores.shape[0], n = scores.shape[1];
  std::vector<int32_t> out(rows);
  for (int64_t r = 0; r < rows; ++r)
    out[r] = static_cast<int32_t>(argmaxOfRow(scores.f32() + r * n, n));
  return out;
}

ErrorOr<runtime::Device::TopK> CpuDevice::topK(const TensorRef &scores,
                                               int64_t k) {
  LOOM_RETURN_IF_ERROR(kernels::checkTopK(scores, k));
  int64_t rows = scores.shape[0], n = scores.shape[1];
  TopK out;
  out.values.resize(rows * k);
  out.indices.resize(rows * k);
  for (int64_t r = 0; r < rows; ++r)
    topKOfRow(scores.f32() + r * n, n, k, out.values.data() + r * k,
              out.indices.data() + r * k);
  return out;
}

ErrorOr<runtime::Device::TopK>
CpuDevice::topKLogSoftmax(const TensorRef &logits, int64_t k) {
  LOOM_RETURN_IF_ERROR(kernels::checkTopK(logits, k));
  int64_t rows = logits.shape[0], n = logits.shape[1];
  TopK out;
  out.values.resize(rows * k);
  out.indices.resize(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits.f32() + r * n;
    float *values = out.values.data() + r * k;
    topKOfRow(row, n, k, values, out.indices.data() + r * k);
    float lse = logSumExpOfRow(row, n, values[0]);
    for (int64_t c = 0; c < k; ++c)
      values[c] -= lse;
  }
  return out;
}

ErrorOr<std::vector<float>>
CpuDevice::readScores(const TensorRef &scores,
                      const std::vector<int64_t> &cells) {
  LOOM_RETURN_IF_ERROR(kernels::checkScoreCells(scores, cells));
  std::vector<float> values;
  for (int64_t cell : cells)
    values.push_back(scores.f32()[cell]);
  return values;
}

ErrorOr<std::vector<float>> CpuDevice::logSumExp(const TensorRef &logits) {
  LOOM_RETURN_IF_ERROR(kernels::checkScores(logits, "logSumExp"));
  int64_t rows = logits.shape[0], n = logits.shape[1];
  std::vector<float> out(rows);
  // As topKLogSoftmax takes it: from the row's best value.
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits.f32() + r * n;
    float best = 0;
    int32_t at = 0;
    topKOfRow(row, n, 1, &best, &at);
    out[r] = logSumExpOfRow(row, n, best);
  }
  return out;
}

Status CpuDevice::editScores(const TensorRef &scores,
                             const std::vector<ScoreEdit> &edits) {
  LOOM_RETURN_IF_ERROR(kernels::checkScoreEdits(scores, edits));
  float *values = static_cast<float *>(scores.data);
  for (const ScoreEdit &edit : edits)
    values[edit.cell] = edit.applyTo(values[edit.cell]);
  return Status::success();
}

} // namespace loom::cpu
