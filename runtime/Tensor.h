//===- Tensor.h - Tensors the runtime passes around -------------*- C++ -*-===//
//
// `TensorRef` is a dense row-major tensor somebody else owns: what kernels,
// devices and entry points take. `Tensor` owns its memory, which lives on
// the host or on a Device; on the CPU device the two are the same memory, so
// a CPU session's tensors can be read in place. Memory is zeroed, 64-byte
// aligned, and from 1 MiB on an anonymous mapping whose pages cost nothing
// until written (optimizer state that a decoding run never touches stays
// free). Allocation failures come back as an error, never as an exception.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TENSOR_H
#define LOOM_RUNTIME_TENSOR_H

#include "abi/DType.h"
#include "abi/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loom::runtime {

class Device;

/// The number of elements of `shape` (1 for a scalar).
int64_t numelOf(const std::vector<int64_t> &shape);
/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

/// A dense row-major tensor the holder does not own.
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return numelOf(shape); }
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  float *f32() const { return static_cast<float *>(data); }
  /// bf16 elements as their 16 bits.
  uint16_t *bf16() const { return static_cast<uint16_t *>(data); }
  int32_t *i32() const { return static_cast<int32_t *>(data); }
  int64_t *i64() const { return static_cast<int64_t *>(data); }
};

/// The broadcast domain of a generated kernel's arguments (right-aligned,
/// the largest size of each dim) as rows, every dim but the last flattened,
/// and columns, the last dim: how a device splits a kernel's work. A rank-0
/// domain is one row of one column.
std::pair<int64_t, int64_t> kernelDomain(const std::vector<TensorRef> &args);

/// From this size on, host memory is mapped rather than allocated: the
/// kernel hands out zeroed pages lazily, so untouched memory costs nothing,
/// and a device may keep the mapping when it is freed (cpu::MappedBlocks).
/// 256 KiB: a batch of 32 sentences of a 128-wide decoder has caches of
/// 0.25–1 MiB, which from the host allocator came back as fresh pages,
/// faulted in again, for every batch (1.15x at int8 greedy, batch 32).
constexpr size_t kMappedHostBytes = size_t(1) << 18;

/// Whether new memory must read as zeros, or may hold anything because its
/// user writes every byte before reading it.
enum class Fill { Zeros, Unspecified };

/// 64-byte aligned host memory of at least `bytes` (one byte when 0), zeroed
/// unless `fill` is Unspecified; freed by freeHostMemory with the same size.
ErrorOr<void *> allocateHostMemory(size_t bytes, Fill fill = Fill::Zeros);
void freeHostMemory(void *memory, size_t bytes);

class Tensor {
public:
  Tensor() = default;
  /// A zeroed tensor in host memory.
  static ErrorOr<Tensor> host(DType dtype, std::vector<int64_t> shape);
  /// A tensor in `device`'s memory, zeroed unless `fill` is Unspecified
  /// (for a tensor written in full before it is read: a copy's or a
  /// gather's destination, a cache read only where it was written).
  static ErrorOr<Tensor> onDevice(Device &device, DType dtype,
                                  std::vector<int64_t> shape,
                                  Fill fill = Fill::Zeros);

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numel() const { return numelOf(dims); }
  int64_t bytes() const { return numel() * dtypeSize(type); }
  /// The device whose memory holds the data; nullptr for host memory.
  Device *device() const { return owner; }
  void *data() { return storage.get(); }
  const void *data() const { return storage.get(); }
  /// Typed views of host-accessible data.
  float *f32() { return static_cast<float *>(data()); }
  const float *f32() const { return static_cast<const float *>(data()); }
  TensorRef ref() const;

  /// Bytes its memory holds (at least bytes()).
  size_t capacity() const { return storage ? storage.get_deleter().bytes : 0; }
  /// Makes this `dtype` `shape` over the same memory, which is not cleared,
  /// when it holds that many bytes; else false, and nothing changes.
  bool reuseAs(DType dtype, const std::vector<int64_t> &shape);

private:
  struct Release {
    // Spelled out: a nested class's member initializers would not make it
    // default-constructible before Tensor is complete.
    Release() : device(nullptr), bytes(0) {}
    Release(Device *device, size_t bytes) : device(device), bytes(bytes) {}
    void operator()(char *p) const;
    Device *device;
    size_t bytes;
  };
  DType type = DType::F32;
  std::vector<int64_t> dims;
  Device *owner = nullptr;
  std::unique_ptr<char, Release> storage;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_TENSOR_H
