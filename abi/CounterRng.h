//===- CounterRng.h - Counter-based random numbers for dropout --*- C++ -*-===//
//
// Dropout's keep decision for element `index` is a pure function of
// (seed, offset, index): no generator state is carried between ops or steps,
// so the backward pass regenerates the forward's mask, a training step
// replays bit for bit, and any backend that evaluates this function in any
// order agrees with the reference interpreter. Header-only and free of MLIR so
// kernels can include it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_COUNTERRNG_H
#define LOOM_ABI_COUNTERRNG_H

#include <cstdint>

// CUDA kernels evaluate the same functions on the device
// (runtime/cuda/AttentionKernels.cu), so that their dropout decisions are
// the CPU's bit for bit.
#ifdef __CUDACC__
#define LOOM_HOST_DEVICE __host__ __device__
#else
#define LOOM_HOST_DEVICE
#endif

namespace loom {

/// The SplitMix64 finalizer: a bijective mix with full avalanche.
LOOM_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// The key of one dropout site in one step.
LOOM_HOST_DEVICE inline uint64_t dropoutKey(uint64_t seed, uint64_t offset) {
  return mix64(mix64(seed + 0x9e3779b97f4a7c15ULL) ^
               (offset * 0xd6e8feb86659fd93ULL));
}

/// A uniform number in [0, 1) for element `index` of the site `key`.
LOOM_HOST_DEVICE inline double dropoutUniform(uint64_t key, uint64_t index) {
  return static_cast<double>(mix64(key + index * 0x9e3779b97f4a7c15ULL) >> 11) *
         0x1.0p-53;
}

/// Whether element `index` survives dropout with probability `1 - rate`.
LOOM_HOST_DEVICE inline bool dropoutKeep(uint64_t key, uint64_t index,
                                         double rate) {
  return dropoutUniform(key, index) >= rate;
}

} // namespace loom

#endif // LOOM_ABI_COUNTERRNG_H
