//===- Gemm.cpp - Row-major SGEMM over the linked BLAS --------------------===//
//
// Both libraries take row-major operands directly (oneDNN's dnnl_sgemm is
// row-major only; OpenBLAS through CBLAS's CblasRowMajor), so no operand is
// ever copied here.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Gemm.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

// GNU OpenMP, which Debian's oneDNN runs on; declared here so that the
// runtime needs no OpenMP flags, only the library.
extern "C" void omp_set_num_threads(int n);

using namespace loom::cpu;

namespace {

/// -1 until the first use reads LOOM_BLAS.
std::atomic<int> chosenBackend{-1};

/// What setBlasThreads asked for (0: each library's default), and what
/// this thread last told OpenMP. GNU OpenMP keeps the thread count per
/// calling thread, so a thread that runs GEMMs applies the request itself
/// before its first GEMM after a change.
std::atomic<int> requestedThreads{0};
thread_local int appliedThreads = 0;

Blas backendFromEnvironment() {
  const char *env = std::getenv("LOOM_BLAS");
  if (!env || !*env || !std::strcmp(env, "onednn"))
    return Blas::OneDnn;
  if (!std::strcmp(env, "openblas"))
    return Blas::OpenBlas;
  std::fprintf(stderr,
               "loom: LOOM_BLAS=%s is neither 'onednn' nor 'openblas'; "
               "using onednn\n",
               env);
  return Blas::OneDnn;
}

} // namespace

Blas loom::cpu::blasBackend() {
  int b = chosenBackend.load(std::memory_order_acquire);
  if (b >= 0)
    return static_cast<Blas>(b);
  // Once, so that a bad value warns once.
  static std::once_flag once;
  std::call_once(once, [] {
    int expected = -1;
    chosenBackend.compare_exchange_strong(
        expected, static_cast<int>(backendFromEnvironment()));
  });
  return static_cast<Blas>(chosenBackend.load(std::memory_order_acquire));
}

void loom::cpu::setBlasBackend(Blas backend) {
  chosenBackend.store(static_cast<int>(backend), std::memory_order_release);
}

const char *loom::cpu::blasName() {
  return blasBackend() == Blas::OneDnn ? "onednn" : "openblas";
}

void loom::cpu::setBlasThreads(int n) {
  if (n < 1)
    n = 1;
  // OpenBLAS's count is global.
  openblas_set_num_threads(n);
  requestedThreads.store(n, std::memory_order_relaxed);
}

void loom::cpu::applyOneDnnThreads() {
  int threads = requestedThreads.load(std::memory_order_relaxed);
  if (threads != appliedThreads && threads > 0) {
    omp_set_num_threads(threads);
    appliedThreads = threads;
  }
}

void loom::cpu::sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    // Neither library is asked about an empty contraction: C = beta * C,
    // without reading C when beta is 0 (it may hold garbage).
    for (int64_t i = 0; i < m; ++i) {
      float *row = c + i * ldc;
      if (beta == 0.0f)
        std::memset(row, 0, n * sizeof(float));
      else
        for (int64_t j = 0; j < n; ++j)
          row[j] *= beta;
    }
    return;
  }
  if (blasBackend() == Blas::OneDnn) {
    applyOneDnnThreads();
    dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a, lda,
               b, ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}
