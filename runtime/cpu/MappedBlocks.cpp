//===- MappedBlocks.cpp - Large host blocks kept for reuse ----------------===//

#include "runtime/cpu/MappedBlocks.h"
#include "runtime/Tensor.h"

#include <cstring>
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
    // The smallest kept block of at least the class and at most twice it,
    // the most recently freed of equal ones (its pages likelier in cache).
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->first >= size && it->first <= 2 * size &&
          (best == free.end() || it->first <= best->first))
        best = it;
    if (best != free.end()) {
      auto [blockSize, block] = *best;
      free.erase(best);
      keptSize -= blockSize;
      lent.emplace(block, blockSize);
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
  if (fresh) {
    std::lock_guard<std::mutex> lock(mutex);
    lent.emplace(*fresh, size);
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
  std::vector<std::pair<size_t, void *>> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // The block's own size: a request may have been given a larger one.
    size_t size = classBytes(bytes);
    if (auto found = lent.find(memory); found != lent.end()) {
      size = found->second;
      lent.erase(found);
    }
    if (size > limit) {
      evicted.emplace_back(size, memory);
    } else {
      free.emplace_back(size, memory);
      keptSize += size;
    }
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
