//===- MappedBlocks.h - Large host blocks kept for reuse --------*- C++ -*-===//
//
// Large device tensors on the CPU are anonymous mappings: zeroed by the
// kernel page by page as they are first written, and unmapped when freed.
// Decoding frees and allocates tensors of nearly the same sizes at every
// step (the caches grow by one position, the log-probabilities and the
// gathered caches come and go), and paying a page fault and the kernel's
// zeroing for every page of each was a quarter of beam search's time on the
// `base` model (docs/PERFORMANCE.md). MappedBlocks keeps freed mappings,
// maps new ones in size classes (four per power of two, so a class wastes at
// most a quarter), and hands a request the smallest kept block of at least
// its class and at most twice it, zeroed by memset, which on resident pages
// costs a fraction of the faults, or as it is where the caller writes before
// it reads. Not only its own class: a server's batches differ in rows and
// lengths from one to the next, and with exact classes its kept blocks were
// mostly of sizes not asked for again, while fresh mappings went on (RSS
// twice the offline translator's, docs/PERFORMANCE.md).
//
// It holds at most `limit` bytes of free blocks, the most recently freed
// (sizes drift as decoding goes on, and the oldest blocks are of classes no
// longer asked for); when a mapping fails it returns them all to the system
// and tries once more, so kept blocks never make an allocation fail that
// would have succeeded without them.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_MAPPEDBLOCKS_H
#define LOOM_RUNTIME_CPU_MAPPEDBLOCKS_H

#include "abi/Error.h"
#include "runtime/Tensor.h"

#include <cstddef>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace loom::cpu {

class MappedBlocks {
public:
  explicit MappedBlocks(size_t limit) : limit(limit) {}
  ~MappedBlocks();
  MappedBlocks(const MappedBlocks &) = delete;
  MappedBlocks &operator=(const MappedBlocks &) = delete;

  /// Memory of `bytes`, 64-byte aligned, zeroed unless `fill` is
  /// Unspecified: a kept block or a new mapping from kMappedHostBytes on, the
  /// host allocator below. A kept block handed out Unspecified holds what its
  /// last user left, and its pages are already resident: neither a fault nor a
  /// memset per page (a decoder's cache, with room for every position it may
  /// reach, would otherwise be zeroed in full for every batch).
  ErrorOr<void *> allocate(size_t bytes,
                           runtime::Fill fill = runtime::Fill::Zeros);
  /// Takes back what allocate(bytes) returned, kept at the block's own size.
  void release(void *memory, size_t bytes);
  /// Returns every kept block to the system.
  void trim();

  /// Bytes in kept free blocks.
  size_t keptBytes() const;
  /// The mapping size of a request of `bytes` (from kMappedHostBytes on).
  static size_t classBytes(size_t bytes);

private:
  void trimLocked();

  const size_t limit;
  mutable std::mutex mutex;
  std::deque<std::pair<size_t, void *>> free; // block size, block; oldest first
  std::unordered_map<void *, size_t> lent;    // block, its size
  size_t keptSize = 0;
};

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_MAPPEDBLOCKS_H
