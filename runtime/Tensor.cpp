//===- Tensor.cpp - Tensors the runtime passes around ---------------------===//

#include "runtime/Tensor.h"

#include "runtime/Device.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sys/mman.h>

namespace loom::runtime {

constexpr size_t kAlignment = 64;

int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static size_t roundedBytes(size_t bytes) {
  size_t size = bytes ? bytes : 1;
  return (size + kAlignment - 1) / kAlignment * kAlignment;
}

ErrorOr<void *> allocateHostMemory(size_t bytes, Fill fill) {
  if (bytes > std::numeric_limits<size_t>::max() / 2)
    return Status::failure("cannot allocate " + std::to_string(bytes) +
                               " bytes",
                           ErrorCode::OutOfMemory);
  size_t rounded = roundedBytes(bytes);
  if (rounded >= kMappedHostBytes) {
    void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return Status::failure("cannot map " + std::to_string(rounded) +
                                 " bytes: " + std::strerror(errno),
                             ErrorCode::OutOfMemory);
    return p;
  }
  void *p = std::aligned_alloc(kAlignment, rounded);
  if (!p)
    return Status::failure("cannot allocate " + std::to_string(rounded) +
                               " bytes",
                           ErrorCode::OutOfMemory);
  if (fill == Fill::Zeros)
    std::memset(p, 0, rounded);
  return p;
}

void freeHostMemory(void *memory, size_t bytes) {
  if (!memory)
    return;
  size_t rounded = roundedBytes(bytes);
  if (rounded >= kMappedHostBytes)
    munmap(memory, rounded);
  else
    std::free(memory);
}

void Tensor::Release::operator()(char *p) const {
  if (device)
    device->deallocate(p, bytes);
  else
    freeHostMemory(p, bytes);
}

/// The bytes of `shape` of `dtype`, or a failure when a dim is negative or
/// the size overflows.
static ErrorOr<size_t> checkedBytes(DType dtype,
                                    const std::vector<int64_t> &shape) {
  int64_t bytes = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0)
      return Status::failure("negative dim in shape " + shapeString(shape));
    if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / d)
      return Status::failure("a tensor of shape " + shapeString(shape) +
                                 " is too large",
                             ErrorCode::OutOfMemory);
    bytes *= d;
  }
  return static_cast<size_t>(bytes);
}

ErrorOr<Tensor> Tensor::host(DType dtype, std::vector<int64_t> shape) {
  ErrorOr<size_t> bytes = checkedBytes(dtype, shape);
  if (!bytes)
    return bytes.status();
  ErrorOr<void *> memory = allocateHostMemory(*bytes);
  if (!memory)
    return memory.status();
  Tensor t;
  t.type = dtype;
  t.dims = std::move(shape);
  t.storage = std::unique_ptr<char, Release>(static_cast<char *>(*memory),
                                             Release{nullptr, *bytes});
  return t;
}

bool Tensor::reuseAs(DType dtype, const std::vector<int64_t> &shape) {
  ErrorOr<size_t> bytes = checkedBytes(dtype, shape);
  if (!storage || !bytes || *bytes > capacity())
    return false;
  type = dtype;
  dims = shape;
  return true;
}

ErrorOr<Tensor> Tensor::onDevice(Device &device, DType dtype,
                                 std::vector<int64_t> shape, Fill fill) {
  ErrorOr<size_t> bytes = checkedBytes(dtype, shape);
  if (!bytes)
    return bytes.status();
  ErrorOr<void *> memory = fill == Fill::Zeros
                               ? device.allocate(*bytes)
                               : device.allocateUnspecified(*bytes);
  if (!memory)
    return memory.status();
  Tensor t;
  t.type = dtype;
  t.dims = std::move(shape);
  t.owner = &device;
  t.storage = std::unique_ptr<char, Release>(static_cast<char *>(*memory),
                                             Release{&device, *bytes});
  return t;
}

TensorRef Tensor::ref() const {
  return {const_cast<char *>(storage.get()), type, dims};
}

ErrorOr<Tensor> toHost(const Tensor &tensor) {
  ErrorOr<Tensor> copy = Tensor::host(tensor.dtype(), tensor.shape());
  if (!copy)
    return copy;
  if (tensor.bytes() == 0)
    return copy;
  if (!tensor.device()) {
    std::memcpy(copy->data(), tensor.data(), tensor.bytes());
    return copy;
  }
  LOOM_RETURN_IF_ERROR(tensor.device()->copy(copy->data(), tensor.data(),
                                             tensor.bytes(),
                                             CopyDirection::DeviceToHost));
  return copy;
}

ErrorOr<Tensor> toDevice(Device &device, const TensorRef &tensor) {
  ErrorOr<Tensor> copy = Tensor::onDevice(device, tensor.dtype, tensor.shape);
  if (!copy || tensor.bytes() == 0)
    return copy;
  LOOM_RETURN_IF_ERROR(device.copy(copy->data(), tensor.data, tensor.bytes(),
                                   CopyDirection::HostToDevice));
  return copy;
}

std::pair<int64_t, int64_t> kernelDomain(const std::vector<TensorRef> &args) {
  size_t rank = 0;
  for (const TensorRef &arg : args)
    rank = std::max(rank, arg.shape.size());
  if (rank == 0)
    return {1, 1};
  // On the stack for the ranks models have: every generated kernel's launch
  // asks.
  constexpr size_t kInline = 8;
  int64_t inlineDomain[kInline];
  std::vector<int64_t> heapDomain;
  int64_t *domain = inlineDomain;
  if (rank > kInline) {
    heapDomain.resize(rank);
    domain = heapDomain.data();
  }
  std::fill(domain, domain + rank, int64_t(1));
  for (const TensorRef &arg : args)
    for (size_t d = 0; d < arg.shape.size(); ++d) {
      int64_t &size = domain[rank - arg.shape.size() + d];
      size = std::max(size, arg.shape[d]);
    }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= domain[d];
  return {rows, domain[rank - 1]};
}

} // namespace loom::runtime
