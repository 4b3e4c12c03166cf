//===- MemoryPlan.cpp - Packing buffers into one arena --------------------===//
//
// Largest first matters more than the choice of gap: the big activations of
// a Transformer (attention scores, logits) decide the arena, and placing
// them before the small ones leaves the small ones the holes between them.
// Ties go to the longer-lived buffer, which constrains more. The scan of
// placed buffers is quadratic in the worst case; buffers are kept sorted by
// offset so that one pass over those live at the same time finds every gap.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <map>

using namespace loom;

static bool overlapInTime(const BufferLifetime &a, const BufferLifetime &b) {
  return a.start <= b.end && b.start <= a.end;
}

ArenaLayout loom::packBuffers(llvm::ArrayRef<BufferLifetime> buffers) {
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferLifetime &x = buffers[a], &y = buffers[b];
    if (x.bytes != y.bytes)
      return x.bytes > y.bytes;
    return x.end - x.start > y.end - y.start;
  });

  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  // Placed buffers by offset: (offset, buffer index).
  std::multimap<int64_t, size_t> placed;
  for (size_t i : order) {
    const BufferLifetime &b = buffers[i];
    if (b.bytes == 0)
      continue;
    int64_t bestOffset = -1, bestGap = 0, top = 0;
    for (auto [offset, j] : placed) {
      const BufferLifetime &other = buffers[j];
      if (!overlapInTime(b, other))
        continue;
      int64_t gap = offset - top;
      if (gap >= b.bytes && (bestOffset < 0 || gap < bestGap)) {
        bestOffset = top;
        bestGap = gap;
      }
      top = std::max(top, offset + other.bytes);
    }
    int64_t offset = bestOffset >= 0 ? bestOffset : top;
    layout.offsets[i] = offset;
    layout.arenaBytes = std::max(layout.arenaBytes, offset + b.bytes);
    placed.emplace(offset, i);
  }
  return layout;
}

int64_t loom::liveLowerBound(llvm::ArrayRef<BufferLifetime> buffers) {
  // Bytes that start living at a step, and bytes that stop after it.
  std::map<int64_t, int64_t> delta;
  for (const BufferLifetime &b : buffers) {
    delta[b.start] += b.bytes;
    delta[b.end + 1] -= b.bytes;
  }
  int64_t live = 0, most = 0;
  for (auto [step, change] : delta) {
    live += change;
    most = std::max(most, live);
  }
  return most;
}

bool loom::isValidLayout(llvm::ArrayRef<BufferLifetime> buffers,
                         const ArenaLayout &layout) {
  if (layout.offsets.size() != buffers.size())
    return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t a = layout.offsets[i];
    if (buffers[i].bytes == 0)
      continue;
    if (a < 0 || a + buffers[i].bytes > layout.arenaBytes)
      return false;
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      int64_t b = layout.offsets[j];
      if (buffers[j].bytes == 0 || !overlapInTime(buffers[i], buffers[j]))
        continue;
      if (a < b + buffers[j].bytes && b < a + buffers[i].bytes)
        return false;
    }
  }
  return true;
}
