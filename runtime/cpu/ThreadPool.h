//===- ThreadPool.h - Splitting kernels over cores --------------*- C++ -*-===//
//
// `parallelFor` splits a range over N threads, the calling thread among
// them; a pool of one runs everything inline. The threads are OpenMP's team,
// shared with the BLAS (ThreadPool.cpp says why).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_THREADPOOL_H
#define LOOM_RUNTIME_CPU_THREADPOOL_H

#include <cstdint>
#include <functional>

namespace loom::cpu {

class ThreadPool {
public:
  /// `threads` <= 0 means one per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return numThreads; }

  /// Calls `body(begin, end)` on disjoint ranges covering [0, n), each at
  /// least `grain` long (except the last), on up to size() threads, and
  /// returns when all are done. Not reentrant: `body` must not call
  /// parallelFor on the same pool.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &body);

private:
  struct State;
  int numThreads;
  State *state;
};

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_THREADPOOL_H
