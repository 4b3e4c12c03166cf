//===- MappedBlocks.cpp - Large host blocks kept for reuse ----------------===//

#include "runtime/cpu/MappedBlocks.h"
#include "runtime/Tensor.h"

#include <cstring>
#include <iterator>
#include <vector>

using namespace loom;
using namespace loom::cpu;

namespace {

/// Whether a request goes through the size classes: below kMappedHostBytes
/// the host allocator's own free lists serve, and beyond 2^62 no class is
/// computed without overflow.
bool classed(size_t bytes) {
  return bytes >= runtime::kMappedHostBytes && bytes <= (size_t(1) << 62);
}

} // namespace

size_t MappedBlocks::classBytes(size_t bytes) {
  size_t power = runtime::kMappedHostBytes;
  while (power <= bytes / 2)
    power *= 2;
  // [power, 2 * power) in four steps of power / 4 (a multiple of the page).
  size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

MappedBlocks::~MappedBlocks() { trimLocked(); }

ErrorOr<void *> MappedBlocks::allocate(size_t bytes, runtime::Fill fill) {
  if (!classed(bytes))
    return runtime::allocateHostMemory(bytes, fill);
  size_t size = classBytes(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = free.rbegin(); it != free.rend(); ++it) {
      if (it->first != size)
        continue;
      void *block = it->second;
      free.erase(std::next(it).base());
      keptSize -= size;
      if (fill == runtime::Fill::Zeros)
        std::memset(block, 0, bytes);
      return block;
    }
  }
  // A fresh mapping of the whole class; what is kept must not make it fail.
  ErrorOr<void *> fresh = runtime::allocateHostMemory(size);
  if (!fresh) {
    trim();
    fresh = runtime::allocateHostMemory(size);
  }
  return fresh;
}

void MappedBlocks::release(void *memory, size_t bytes) {
  if (!memory)
    return;
  if (!classed(bytes)) {
    runtime::freeHostMemory(memory, bytes);
    return;
  }
  size_t size = classBytes(bytes);
  if (size > limit) {
    runtime::freeHostMemory(memory, size);
    return;
  }
  std::vector<std::pair<size_t, void *>> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex);
    free.emplace_back(size, memory);
    keptSize += size;
    while (keptSize > limit) {
      evicted.push_back(free.front());
      keptSize -= free.front().first;
      free.pop_front();
    }
  }
  for (auto &[blockSize, block] : evicted)
    runtime::freeHostMemory(block, blockSize);
}

void MappedBlocks::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  trimLocked();
}

void MappedBlocks::trimLocked() {
  for (auto &[size, block] : free)
    runtime::freeHostMemory(block, size);
  free.clear();
  keptSize = 0;
}

size_t MappedBlocks::keptBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return keptSize;
}
