//===- MemoryPlan.h - Packing buffers into one arena ------------*- C++ -*-===//
//
// The part of memory planning that knows nothing of the IR: buffers, each a
// size and a live range in schedule steps, packed into one arena so that
// buffers live at the same step never overlap.
//
//   step:   0    1    2    3    4
//   a  [0, 2]  ############            offset 0
//   b  [1, 4]       ##################  offset 64 (overlaps a in time)
//   c  [3, 4]                 #######   offset 0  (reuses a's bytes)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_MEMORYPLAN_H
#define LOOM_PASSES_MEMORYPLAN_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace loom {

/// A buffer live from step `start` to step `end`, both included.
struct BufferLifetime {
  int64_t start = 0;
  int64_t end = 0;
  int64_t bytes = 0;
};

struct ArenaLayout {
  std::vector<int64_t> offsets; // one per buffer
  int64_t arenaBytes = 0;
};

/// Best fit, largest first: buffers by decreasing size each take the
/// smallest gap that holds them among the buffers already placed that are
/// live at the same time, or go above them all. Every offset is a sum of
/// sizes, so sizes rounded up to an alignment give aligned offsets.
ArenaLayout packBuffers(llvm::ArrayRef<BufferLifetime> buffers);

/// The most bytes live at any one step: no layout needs less.
int64_t liveLowerBound(llvm::ArrayRef<BufferLifetime> buffers);

/// Whether `layout` keeps every pair of buffers live at the same step apart
/// and inside the arena.
bool isValidLayout(llvm::ArrayRef<BufferLifetime> buffers,
                   const ArenaLayout &layout);

} // namespace loom

#endif // LOOM_PASSES_MEMORYPLAN_H
