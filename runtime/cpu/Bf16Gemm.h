//===- Bf16Gemm.h - Products of bf16 factors with f32 sums ------*- C++ -*-===//
//
// What a mixed-precision training step multiplies (loom-mixed-precision):
// factors stored as bf16, every sum and the result f32. The product of two
// bf16 values is exact in f32, so the result differs from an f32 product of
// the rounded factors only in the order of its sums.
//
// On a CPU with AVX512-BF16 it is a oneDNN matmul, which multiplies bf16
// pairs in hardware (`vdpbf16ps`). Elsewhere oneDNN has no bf16 matmul (or
// only an emulation slower than f32), and the CPU device refuses bf16
// executables there, unless a test asks it to run them anyway
// (LOOM_CPU_EMULATE_BF16, CpuFeatures.h): then both factors are widened to
// f32, which is exact, and sgemm multiplies them, so that such a machine
// checks what the bf16 code computes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_BF16GEMM_H
#define LOOM_RUNTIME_CPU_BF16GEMM_H

#include <cstdint>
#include <cstring>

namespace loom::cpu {

/// `x` rounded to bf16 (to nearest, ties to even; a NaN stays a NaN), as its
/// 16 bits: the rounding of the interpreter and of generated kernels.
inline uint16_t bf16FromFloat(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

/// The float a bf16 holds (exact).
inline float floatFromBf16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

/// C[m, n] = op(A) op(B), row-major, for bf16 A and B (sgemm's conventions:
/// op(A) is [m, k], A is [k, m] when `transA`; op(B) is [k, n], B is [n, k]
/// when `transB`) and an f32 C, the sums in f32.
void bf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
              float *c, int64_t ldc);

/// Writes `in` rounded to bf16 and widened back to `out` (which may be
/// `in`): the values a bf16 product reads, as floats.
void roundThroughBf16(const float *in, int64_t count, float *out);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_BF16GEMM_H
