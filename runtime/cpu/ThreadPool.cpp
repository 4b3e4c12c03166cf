//===- ThreadPool.cpp - Splitting kernels over cores ----------------------===//
//
// The pool is OpenMP's thread team, the same threads oneDNN's GEMMs run on.
// A pool of our own would put two sets of threads on the same cores: GNU
// OpenMP's workers spin for a while after each GEMM (OMP_WAIT_POLICY's
// default), so every kernel of ours that followed a GEMM fought them for the
// cores; on a 2-core machine that made a small model's step 100x slower. With
// one team, the threads that spin are the ones that take the next kernel.
//
// Chunks are claimed from an atomic counter, several per thread, so a thread
// that starts late takes less instead of holding the call up.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/ThreadPool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace loom::cpu;

/// Chunks per thread: more than one lets a thread that is free early take
/// over the share of one that is late.
static constexpr int64_t kChunksPerThread = 4;

struct ThreadPool::State {};

ThreadPool::ThreadPool(int threads) : state(nullptr) {
  if (threads <= 0)
    threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  numThreads = threads;
}

ThreadPool::~ThreadPool() = default;

void ThreadPool::parallelFor(
    int64_t n, int64_t grain,
    const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  // As many chunks as fit `grain` each, at most a few per thread.
  int64_t chunks = std::min(n / grain, kChunksPerThread * numThreads);
  if (numThreads == 1 || chunks <= 1 || omp_in_parallel()) {
    body(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  int threads = static_cast<int>(std::min<int64_t>(numThreads, chunks));
#pragma omp parallel num_threads(threads)
  for (;;) {
    int64_t c = next.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks)
      break;
    // Boundaries c*n/chunks make every chunk floor or ceil of n/chunks.
    body(c * n / chunks, (c + 1) * n / chunks);
  }
}
