//===- gemm_bench.cpp - OpenBLAS against oneDNN at the model's GEMMs ------===//
//
// The CPU backend calls a BLAS for every loom.linear and matmul. This times
// the candidates, OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm, at the GEMM
// shapes of the `base` Transformer's training step at 4096 tokens (forward
// x.W^T, and the backward's dX = dY.W and dW = dY^T.X), so the choice is
// made on measurements, and their rate is the ceiling the backend's
// model GFLOP/s is held against.
//
//   build/bin/gemm_bench --benchmark_counters_tabular=true
//
// OpenBLAS's threads follow OPENBLAS_NUM_THREADS, oneDNN's OMP_NUM_THREADS.
//
//===----------------------------------------------------------------------===//

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <random>
#include <vector>

namespace {

struct Shape {
  const char *name;
  char transA, transB; // 'N' or 'T', row-major.
  int64_t m, n, k;
};

// The base model's GEMMs at 4096 tokens (d 512, d_ff 2048, vocab 37000).
const Shape kShapes[] = {
    {"proj_fwd", 'N', 'T', 4096, 512, 512},
    {"ffn1_fwd", 'N', 'T', 4096, 2048, 512},
    {"ffn2_fwd", 'N', 'T', 4096, 512, 2048},
    {"ffn1_dx", 'N', 'N', 4096, 512, 2048},
    {"ffn1_dw", 'T', 'N', 2048, 512, 4096},
    {"generator_fwd", 'N', 'T', 4096, 37000, 512},
};

struct Operands {
  std::vector<float> a, b, c;
  explicit Operands(const Shape &s)
      : a(s.m * s.k), b(s.k * s.n), c(s.m * s.n) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float &x : a)
      x = u(rng);
    for (float &x : b)
      x = u(rng);
  }
};

void setCounters(benchmark::State &state, const Shape &s) {
  double flops = 2.0 * s.m * s.n * s.k;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void openblas(benchmark::State &state, Shape s) {
  Operands o(s);
  int64_t lda = s.transA == 'N' ? s.k : s.m;
  int64_t ldb = s.transB == 'N' ? s.n : s.k;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, s.transA == 'N' ? CblasNoTrans : CblasTrans,
                s.transB == 'N' ? CblasNoTrans : CblasTrans, s.m, s.n, s.k,
                1.0f, o.a.data(), lda, o.b.data(), ldb, 0.0f, o.c.data(), s.n);
    benchmark::DoNotOptimize(o.c.data());
  }
  setCounters(state, s);
}

void onednn(benchmark::State &state, Shape s) {
  Operands o(s);
  int64_t lda = s.transA == 'N' ? s.k : s.m;
  int64_t ldb = s.transB == 'N' ? s.n : s.k;
  for (auto _ : state) {
    if (dnnl_sgemm(s.transA, s.transB, s.m, s.n, s.k, 1.0f, o.a.data(), lda,
                   o.b.data(), ldb, 0.0f, o.c.data(), s.n) != dnnl_success)
      state.SkipWithError("dnnl_sgemm failed");
    benchmark::DoNotOptimize(o.c.data());
  }
  setCounters(state, s);
}

int registerAll() {
  for (const Shape &s : kShapes) {
    std::string shape = std::string(s.name) + "/" + std::to_string(s.m) + "x" +
                        std::to_string(s.n) + "x" + std::to_string(s.k);
    benchmark::RegisterBenchmark(("openblas/" + shape).c_str(), openblas, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("onednn/" + shape).c_str(), onednn, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return 0;
}

const int registered = registerAll();

} // namespace

BENCHMARK_MAIN();
