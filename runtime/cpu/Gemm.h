//===- Gemm.h - Row-major SGEMM over the linked BLAS ------------*- C++ -*-===//
//
// Every GEMM of the CPU runtime goes through `sgemm`, which hands it to one
// of the two linked libraries. oneDNN is the default: at the base model's
// GEMM shapes on a 2-core AVX2 machine it is faster on four of six, by up to
// 23% on the largest (docs/PERFORMANCE.md). The environment variable
// LOOM_BLAS=onednn|openblas, read at the first call, overrides the default;
// any other value prints a warning on stderr and keeps oneDNN, so a typo
// slows a run down instead of stopping it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_GEMM_H
#define LOOM_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace loom::cpu {

enum class Blas { OneDnn, OpenBlas };

/// C[m, n] = alpha * op(A) * op(B) + beta * C, all row-major; op(A) is
/// [m, k] (A is [k, m] when `transA`), op(B) is [k, n] (B is [n, k] when
/// `transB`). With k == 0, C is scaled by beta (zeroed when beta is 0).
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc);

/// The backend `sgemm` uses now (LOOM_BLAS or the default, unless set).
Blas blasBackend();
/// Makes `sgemm` use `backend` from now on, whatever LOOM_BLAS says.
void setBlasBackend(Blas backend);
/// "onednn" or "openblas": the backend `sgemm` uses now.
const char *blasName();

/// Threads each BLAS call may use (both libraries), from any thread. oneDNN
/// runs on GNU OpenMP, whose thread count belongs to each calling thread;
/// `sgemm` passes the request on in the thread that calls it.
void setBlasThreads(int n);

/// Passes setBlasThreads' request on to OpenMP in the calling thread: what
/// every oneDNN call (sgemm's and the primitives') does first.
void applyOneDnnThreads();

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_GEMM_H
