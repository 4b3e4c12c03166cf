//===- gemm_bench.cpp - OpenBLAS against oneDNN at the model's GEMMs ------===//
//
// The CPU backend calls a BLAS for every loom.linear and matmul. This times
// the candidates, OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm, at the GEMM
// shapes of a Transformer, so the choice is made on measurements, and their
// rate is the ceiling the backend's model GFLOP/s is held against.
//
// Without model flags it times the `base` Transformer's training step at
// 4096 tokens (forward x.W^T, and the backward's dX = dY.W and dW = dY^T.X):
//
//   build/bin/gemm_bench --benchmark_counters_tabular=true
//
// With model flags it times every distinct GEMM shape of one training step
// and of one greedy decoding of that model at that batch (what
// bench/cpu_bench.sh runs):
//
//   build/bin/gemm_bench --d-model=512 --d-ff=2048 --vocab=37000
//       --encoder-layers=6 --decoder-layers=6 --batch=32 --src-len=30
//       --tgt-len=30 --benchmark_format=json
//
// Training (M = batch*src_len source or batch*tgt_len target tokens): for
// every linear y = x.W^T with W [N, K], the forward M x N x K (N,T), dX =
// dY.W as M x K x N (N,N) and dW = dY^T.X as N x K x M (T,N); the linears
// are q, k, v, out and both FFN linears of every layer, the decoder's
// cross-attention (q and out over target tokens, k and v over source
// tokens) and the generator (N = vocab). Decoding: the encoder's and the
// cross-attention k/v forwards over the source tokens once, then per
// generated token the decoder's linears and the generator at M = batch.
// Attention's QK^T and PV (batched, d_model/heads deep) are not BLAS-sized
// GEMMs and are left out. Each benchmark is named LIBRARY/MxNxK/TATB and
// carries counters train_calls and decode_calls (how often the shape runs
// per training step and per decoding), gflop_per_call, and a label naming
// the uses, so a reader of the JSON can weight each shape's rate by its
// share of the work. One untimed call precedes the timing (oneDNN generates
// its kernel for a shape on the first call).
//
// A third variant, packed/..., times the forward shapes (x.W^T) the way the
// CPU device runs a linear layer whose weight does not change between calls
// (runtime/cpu/PackedGemm.h): a oneDNN matmul over W reordered once into the
// primitive's blocked layout. It is what decoding runs; training, whose
// weights change every step, runs dnnl_sgemm. packed-int8/ does the same at
// int8 (rows quantized per call, weights once), and for shapes of at most
// eight rows panels/ and panels-int8/ time the few-row products over a
// weight in panels (runtime/cpu/SmallGemm.h) that the device chooses for
// them on an AVX2 CPU (on one with AVX-512, for one row).
//
// OpenBLAS's threads follow OPENBLAS_NUM_THREADS, oneDNN's OMP_NUM_THREADS.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/SmallGemm.h"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

struct Shape {
  std::string name;
  char transA, transB; // 'N' or 'T', row-major.
  int64_t m, n, k;
  // Model mode only: calls per training step and per greedy decoding, and
  // the uses of the shape ("enc_ffn1.fwd x6 ...").
  double trainCalls = 0, decodeCalls = 0;
  std::string uses;
};

struct Operands {
  std::vector<float> a, b, c;
  explicit Operands(const Shape &s) : a(s.m * s.k), b(s.k * s.n), c(s.m * s.n) {
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
  if (s.trainCalls || s.decodeCalls) {
    state.counters["train_calls"] = s.trainCalls;
    state.counters["decode_calls"] = s.decodeCalls;
    state.counters["gflop_per_call"] = flops / 1e9;
    state.SetLabel(s.uses);
  }
}

/// The timed loop of every library: `call` once per iteration (after the
/// untimed calls each makes first), then the counters.
template <typename Call>
void timeCalls(benchmark::State &state, const Shape &s, Operands &o,
               Call call) {
  for (auto _ : state) {
    call();
    benchmark::DoNotOptimize(o.c.data());
  }
  setCounters(state, s);
}

void openblas(benchmark::State &state, Shape s) {
  Operands o(s);
  int64_t lda = s.transA == 'N' ? s.k : s.m;
  int64_t ldb = s.transB == 'N' ? s.n : s.k;
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, s.transA == 'N' ? CblasNoTrans : CblasTrans,
                s.transB == 'N' ? CblasNoTrans : CblasTrans, s.m, s.n, s.k,
                1.0f, o.a.data(), lda, o.b.data(), ldb, 0.0f, o.c.data(), s.n);
  };
  call(); // Untimed: starts the thread pool and touches C.
  timeCalls(state, s, o, call);
}

void onednn(benchmark::State &state, Shape s) {
  Operands o(s);
  int64_t lda = s.transA == 'N' ? s.k : s.m;
  int64_t ldb = s.transB == 'N' ? s.n : s.k;
  auto call = [&] {
    return dnnl_sgemm(s.transA, s.transB, s.m, s.n, s.k, 1.0f, o.a.data(), lda,
                      o.b.data(), ldb, 0.0f, o.c.data(), s.n);
  };
  // Untimed: oneDNN generates its kernel for the shape on the first call.
  if (call() != dnnl_success) {
    state.SkipWithError("dnnl_sgemm failed");
    return;
  }
  timeCalls(state, s, o, call);
}

/// A linear layer's product as the CPU device runs it over a constant
/// weight, at `precision`, with up to `panelRows` rows multiplied from
/// panels (SmallGemm.h) and more by the oneDNN matmul.
void packed(benchmark::State &state, Shape s,
            loom::cpu::LinearPrecision precision, int64_t panelRows) {
  Operands o(s); // b is W [n, k]
  loom::cpu::PackedWeights weights;
  loom::cpu::setSmallGemmRowsChosen(panelRows);
  auto call = [&] {
    return weights.linear(o.a.data(), o.b.data(), /*version=*/1, s.m, s.n, s.k,
                          o.c.data(), precision);
  };
  // Untimed: the first call only notes the weight, the second packs it.
  call();
  if (!call()) {
    state.SkipWithError("no oneDNN matmul for this shape");
    return;
  }
  timeCalls(state, s, o, call);
}

/// The Transformer whose GEMMs model mode times.
struct Model {
  int64_t dModel = 0, dFF = 0, vocab = 0, encoderLayers = 0, decoderLayers = 0,
          batch = 0, srcLen = 0, tgtLen = 0;
};

/// Collects the distinct (transA, transB, M, N, K) of a model's GEMMs.
class ShapeSet {
public:
  /// y = x.W^T with x [m, k] and W [n, k]: the forward, and with `backward`
  /// dX = dY.W and dW = dY^T.X, `calls` times per step of `train` or not.
  void linear(bool train, const std::string &use, int64_t m, int64_t n,
              int64_t k, double calls, bool backward) {
    add(train, use + ".fwd", 'N', 'T', m, n, k, calls);
    if (!backward)
      return;
    add(train, use + ".dx", 'N', 'N', m, k, n, calls);
    add(train, use + ".dw", 'T', 'N', n, k, m, calls);
  }

  std::vector<Shape> shapes() const {
    std::vector<Shape> out;
    for (const auto &[key, s] : byKey)
      out.push_back(s);
    return out;
  }

private:
  void add(bool train, const std::string &use, char ta, char tb, int64_t m,
           int64_t n, int64_t k, double calls) {
    Shape &s = byKey[std::make_tuple(ta, tb, m, n, k)];
    s.transA = ta;
    s.transB = tb;
    s.m = m;
    s.n = n;
    s.k = k;
    s.name = std::to_string(m) + "x" + std::to_string(n) + "x" +
             std::to_string(k) + "/" + ta + tb;
    (train ? s.trainCalls : s.decodeCalls) += calls;
    char count[32];
    std::snprintf(count, sizeof count, " x%g", calls);
    s.uses += (s.uses.empty() ? "" : ", ") +
              std::string(train ? "train " : "decode ") + use + count;
  }

  std::map<std::tuple<char, char, int64_t, int64_t, int64_t>, Shape> byKey;
};

/// Every GEMM of one training step and of one greedy decoding of `m`.
std::vector<Shape> modelShapes(const Model &m) {
  ShapeSet set;
  int64_t d = m.dModel, ff = m.dFF, le = m.encoderLayers, ld = m.decoderLayers;
  int64_t ns = m.batch * m.srcLen, nt = m.batch * m.tgtLen;
  // The encoder and the memory's cross-attention k/v: both modes, once.
  for (bool train : {true, false}) {
    set.linear(train, "enc_qkvo", ns, d, d, 4 * le, train);
    set.linear(train, "enc_ffn1", ns, ff, d, le, train);
    set.linear(train, "enc_ffn2", ns, d, ff, le, train);
    set.linear(train, "dec_cross_kv", ns, d, d, 2 * ld, train);
  }
  // Training: the decoder over all target tokens.
  set.linear(true, "dec_qkvo_cross_qo", nt, d, d, 6 * ld, true);
  set.linear(true, "dec_ffn1", nt, ff, d, ld, true);
  set.linear(true, "dec_ffn2", nt, d, ff, ld, true);
  set.linear(true, "generator", nt, m.vocab, d, 1, true);
  // Decoding: one new position per sentence, tgt_len times.
  double steps = double(m.tgtLen);
  set.linear(false, "step_qkvo_cross_qo", m.batch, d, d, 6 * ld * steps, false);
  set.linear(false, "step_ffn1", m.batch, ff, d, ld * steps, false);
  set.linear(false, "step_ffn2", m.batch, d, ff, ld * steps, false);
  set.linear(false, "step_generator", m.batch, m.vocab, d, steps, false);
  return set.shapes();
}

/// Removes --d-model=N and the other model flags from argv into `m`.
/// Returns false (after a message) on a malformed or incomplete set.
bool parseModelFlags(int &argc, char **argv, Model &m, bool &given) {
  struct Flag {
    const char *name;
    int64_t *value;
  } flags[] = {{"--d-model=", &m.dModel},
               {"--d-ff=", &m.dFF},
               {"--vocab=", &m.vocab},
               {"--encoder-layers=", &m.encoderLayers},
               {"--decoder-layers=", &m.decoderLayers},
               {"--batch=", &m.batch},
               {"--src-len=", &m.srcLen},
               {"--tgt-len=", &m.tgtLen}};
  int kept = 1;
  int seen = 0;
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    for (Flag &f : flags) {
      size_t len = std::strlen(f.name);
      if (std::strncmp(argv[i], f.name, len) != 0)
        continue;
      char *end = nullptr;
      long long v = std::strtoll(argv[i] + len, &end, 10);
      if (end == argv[i] + len || *end != '\0' || v < 1) {
        std::fprintf(stderr, "gemm_bench: %s needs a positive integer\n",
                     argv[i]);
        return false;
      }
      *f.value = v;
      ++seen;
      matched = true;
      break;
    }
    if (!matched)
      argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  given = seen > 0;
  if (!given)
    return true;
  for (Flag &f : flags)
    if (*f.value == 0) {
      std::fprintf(stderr,
                   "gemm_bench: model mode needs all of --d-model --d-ff "
                   "--vocab --encoder-layers --decoder-layers --batch "
                   "--src-len --tgt-len; missing %.*s\n",
                   int(std::strlen(f.name) - 1), f.name);
      return false;
    }
  return true;
}

/// The base model's GEMMs at 4096 tokens (d 512, d_ff 2048, vocab 37000).
std::vector<Shape> defaultShapes() {
  auto shape = [](const char *name, char ta, char tb, int64_t m, int64_t n,
                  int64_t k) {
    Shape s;
    s.name = std::string(name) + "/" + std::to_string(m) + "x" +
             std::to_string(n) + "x" + std::to_string(k);
    s.transA = ta;
    s.transB = tb;
    s.m = m;
    s.n = n;
    s.k = k;
    return s;
  };
  return {shape("proj_fwd", 'N', 'T', 4096, 512, 512),
          shape("ffn1_fwd", 'N', 'T', 4096, 2048, 512),
          shape("ffn2_fwd", 'N', 'T', 4096, 512, 2048),
          shape("ffn1_dx", 'N', 'N', 4096, 512, 2048),
          shape("ffn1_dw", 'T', 'N', 2048, 512, 4096),
          shape("generator_fwd", 'N', 'T', 4096, 37000, 512)};
}

void registerAll(const std::vector<Shape> &shapes) {
  for (const Shape &s : shapes) {
    benchmark::RegisterBenchmark(("openblas/" + s.name).c_str(), openblas, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("onednn/" + s.name).c_str(), onednn, s)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    if (s.transA != 'N' || s.transB != 'T')
      continue;
    // The oneDNN matmul over a packed weight, and for a few rows the
    // panels, at f32 and int8.
    using loom::cpu::LinearPrecision;
    for (auto [suffix, precision] :
         {std::pair{"", LinearPrecision::F32},
          std::pair{"-int8", LinearPrecision::Int8}}) {
      benchmark::RegisterBenchmark(
          ("packed" + std::string(suffix) + "/" + s.name).c_str(), packed, s,
          precision, int64_t(0))
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      if (s.m <= loom::cpu::kSmallGemmRows)
        benchmark::RegisterBenchmark(
            ("panels" + std::string(suffix) + "/" + s.name).c_str(), packed, s,
            precision, loom::cpu::kSmallGemmRows)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  Model model;
  bool modelMode = false;
  if (!parseModelFlags(argc, argv, model, modelMode))
    return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  registerAll(modelMode ? modelShapes(model) : defaultShapes());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
