//===- MappedBlocks.cpp - Large host blocks kept for reuse ----------------===//

#include "runtime/cpu/MappedBlocks.h"
#include "runtime/Tensor.h"

#include <cerrno>
#include <cstring>
#include <iterator>
#include <sys/mman.h>
#include <vector>

using namespace loom;
using namespace loom::cpu;

namespace {

/// Below this, the host allocator's own free lists serve better.
constexpr size_t kMappedBytes = size_t(1) << 20;

} // namespace

size_t MappedBlocks::classBytes(size_t bytes) {
  size_t power = kMappedBytes;
  while (power <= bytes / 2)
    power *= 2;
  // [power, 2 * power) in four steps of power / 4 (a multiple of the page).
  size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

MappedBlocks::~MappedBlocks() { trimLocked(); }

ErrorOr<void *> MappedBlocks::allocate(size_t bytes) {
  if (bytes < kMappedBytes || bytes > (size_t(1) << 62))
    return runtime::allocateHostMemory(bytes);
  size_t size = classBytes(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = free.rbegin(); it != free.rend(); ++it) {
      if (it->first != size)
        continue;
      void *block = it->second;
      free.erase(std::next(it).base());
      kept -= size;
      std::memset(block, 0, bytes);
      return block;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED)
      return p;
    if (attempt == 0)
      trim(); // what is kept must not make this fail
    else
      return Status::failure("cannot map " + std::to_string(size) +
                                 " bytes: " + std::strerror(errno),
                             ErrorCode::OutOfMemory);
  }
  return Status::failure("unreachable", ErrorCode::OutOfMemory);
}

void MappedBlocks::release(void *memory, size_t bytes) {
  if (!memory)
    return;
  if (bytes < kMappedBytes || bytes > (size_t(1) << 62)) {
    runtime::freeHostMemory(memory, bytes);
    return;
  }
  size_t size = classBytes(bytes);
  if (size > limit) {
    munmap(memory, size);
    return;
  }
  std::vector<std::pair<size_t, void *>> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex);
    free.emplace_back(size, memory);
    kept += size;
    while (kept > limit) {
      evicted.push_back(free.front());
      kept -= free.front().first;
      free.pop_front();
    }
  }
  for (auto &[bytes, block] : evicted)
    munmap(block, bytes);
}

void MappedBlocks::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  trimLocked();
}

void MappedBlocks::trimLocked() {
  for (auto &[size, block] : free)
    munmap(block, size);
  free.clear();
  kept = 0;
}

size_t MappedBlocks::keptBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return kept;
}
