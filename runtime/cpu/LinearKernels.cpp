//===- LinearKernels.cpp - loom.linear and loom.matmul --------------------===//
//
// Both are one BLAS call wherever the layout allows it. loom.linear folds
// every leading dim of x into the GEMM's M and then runs its epilogue (bias,
// activation, residual) in one pass over the result's rows, split over the
// pool (dnnl_sgemm and cblas_sgemm have no epilogue of their own; a oneDNN
// matmul primitive with post-ops would save that pass). A batched matmul
// whose rhs is one matrix folds lhs's batch into M the same way; only a
// truly batched product (per-head attention outside loom.attention) loops
// over its matrices, each GEMM threaded by the BLAS itself. Their attributes
// are abi::LinearCall and abi::MatmulCall. Factors in bf16 (a mixed-precision
// training step's) go to bf16Gemm, whose sums and result are f32; the
// epilogue is the same.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Bf16Gemm.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/PackedGemm.h"
#include "runtime/cpu/SmallGemm.h"
#include "runtime/cpu/VecMath.h"

#include <algorithm>
#include <vector>

using namespace loom::cpu;
using loom::DType;
using loom::ErrorOr;
using loom::Status;
using loom::abi::Activation;

namespace {

void geluRowBase(float *y, int64_t n) { vec::geluRow<vec::Vec4>(y, n); }
#if LOOM_HAVE_AVX2_PATH
LOOM_TARGET_AVX2 void geluRowAvx2(float *y, int64_t n) {
  vec::geluRow<vec::Vec8>(y, n);
}
#endif

/// y = relu?(y + bias) + residual in one pass over a row of n (three loops,
/// one per term, cost a decoder step's small products a few percent). A NaN
/// stays NaN, as the interpreter's (and torch's) relu keeps it.
template <bool Bias, bool Relu, bool Residual>
LOOM_VEC_INLINE void fusedRow(float *y, const float *bias,
                              const float *residual, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    float v = y[j];
    if constexpr (Bias)
      v += bias[j];
    if constexpr (Relu)
      v = v < 0.0f ? 0.0f : v;
    if constexpr (Residual)
      v += residual[j];
    y[j] = v;
  }
}

/// y = act(y + bias) + residual over one row of n; `gelu` is the row
/// function for this CPU. Inlined into epilogueRowBase and, compiled for
/// AVX2 there, epilogueRowAvx2.
LOOM_VEC_INLINE void epilogueRow(float *y, const float *bias,
                                 const float *residual, int64_t n,
                                 Activation activation,
                                 void (*gelu)(float *, int64_t)) {
  if (activation == Activation::Gelu) {
    if (bias)
      fusedRow<true, false, false>(y, bias, nullptr, n);
    gelu(y, n);
    if (residual)
      fusedRow<false, false, true>(y, nullptr, residual, n);
    return;
  }
  bool relu = activation == Activation::Relu;
  if (bias && relu && residual)
    fusedRow<true, true, true>(y, bias, residual, n);
  else if (bias && relu)
    fusedRow<true, true, false>(y, bias, residual, n);
  else if (bias && residual)
    fusedRow<true, false, true>(y, bias, residual, n);
  else if (bias)
    fusedRow<true, false, false>(y, bias, residual, n);
  else if (relu && residual)
    fusedRow<false, true, true>(y, bias, residual, n);
  else if (relu)
    fusedRow<false, true, false>(y, bias, residual, n);
  else if (residual)
    fusedRow<false, false, true>(y, bias, residual, n);
}

using EpilogueRow = void (*)(float *, const float *, const float *, int64_t,
                             Activation, void (*)(float *, int64_t));

void epilogueRowBase(float *y, const float *bias, const float *residual,
                     int64_t n, Activation activation,
                     void (*gelu)(float *, int64_t)) {
  epilogueRow(y, bias, residual, n, activation, gelu);
}
#if LOOM_HAVE_AVX2_PATH
LOOM_TARGET_AVX2 void epilogueRowAvx2(float *y, const float *bias,
                                      const float *residual, int64_t n,
                                      Activation activation,
                                      void (*gelu)(float *, int64_t)) {
  epilogueRow(y, bias, residual, n, activation, gelu);
}
#endif

/// Runs `finish` over the m rows of y [m, n], split over the pool, where
/// there is an epilogue.
template <typename Finish>
void finishAllRows(const KernelCall &call, const Finish &finish,
                   const RowEpilogue &after, int64_t m, int64_t n, float *y) {
  if (!after)
    return;
  int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(n, 1));
  parallelRange(call.pool, m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      finish.row(i, y + i * n);
  });
}

} // namespace

Status loom::cpu::linearKernel(const KernelCall &call) {
  ErrorOr<abi::LinearCall> attrs = abi::LinearCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("linear");
  bool hasBias = attrs->hasBias, hasResidual = attrs->hasResidual;
  Activation activation = attrs->activation;
  kernels::LinearDims dims;
  LOOM_RETURN_IF_ERROR(
      kernels::checkLinear(call.args, hasBias, hasResidual, dims));
  const TensorRef &x = call.args[0], &w = call.args[1], &out = call.args.back();
  const TensorRef *bias = hasBias ? &call.args[2] : nullptr;
  const TensorRef *residual = hasResidual ? &call.args[2 + hasBias] : nullptr;
  int64_t m = dims.m, n = dims.n, k = dims.k;
  const float *b = bias ? bias->f32() : nullptr;
  const float *r = residual ? residual->f32() : nullptr;
  float *y = out.f32();
  auto gelu = geluRowBase;
  EpilogueRow epilogue = epilogueRowBase;
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled()) {
    gelu = geluRowAvx2;
    epilogue = epilogueRowAvx2;
  }
#endif
  struct Finish {
    const float *b, *r;
    int64_t n;
    Activation activation;
    void (*gelu)(float *, int64_t);
    EpilogueRow epilogue;
    void row(int64_t i, float *yRow) const {
      epilogue(yRow, b, r ? r + i * n : nullptr, n, activation, gelu);
    }
  } finish{b, r, n, activation, gelu, epilogue};
  RowEpilogue after;
  if (bias || residual || activation != Activation::None)
    after = {[](const void *context, int64_t i, float *yRow) {
               static_cast<const Finish *>(context)->row(i, yRow);
             },
             &finish};
  // A weight of known contents is packed once (PackedGemm.h), for a few
  // rows too (decoding one sentence, a beam, a small batch: in panels,
  // SmallGemm.h), and the product applies the epilogue. One the cache does
  // not keep (a training step's, or without a number) is read as it lies: a
  // few rows in f32 by smallGemm, more by sgemm.
  if (dims.factors == DType::BF16) {
    // A mixed-precision training step's product: bf16 factors, f32 sums.
    bf16Gemm(false, true, m, n, k, x.bf16(), k, w.bf16(), k, y, n);
    finishAllRows(call, finish, after, m, n, y);
    return Status::success();
  }
  bool f32 = !call.packed || call.precision == LinearPrecision::F32;
  if (call.packed &&
      call.packed->linear(x.f32(), w.f32(), call.versionOf(1), m, n, k, y,
                          call.precision, call.pool, after))
    return Status::success();
  if (call.precision == LinearPrecision::BF16) {
    // A bf16 decoder whose weight the cache declined (no bf16 matmul on this
    // CPU, which runs it only when a test emulates bf16): the factors
    // rounded as the packed product would round them, multiplied in f32.
    thread_local std::vector<float> rows, weight;
    rows.resize(size_t(m * k));
    weight.resize(size_t(n * k));
    roundThroughBf16(x.f32(), m * k, rows.data());
    roundThroughBf16(w.f32(), n * k, weight.data());
    sgemm(false, true, m, n, k, 1.0f, rows.data(), k, weight.data(), k, 0.0f, y,
          n);
  } else if (!(f32 && m <= smallGemmRowsChosen() &&
               smallGemm(x.f32(), w.f32(), m, n, k, y, call.pool))) {
    sgemm(false, true, m, n, k, 1.0f, x.f32(), k, w.f32(), k, 0.0f, y, n);
  }
  finishAllRows(call, finish, after, m, n, y);
  return Status::success();
}

Status loom::cpu::matmulKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 3, "matmul"));
  ErrorOr<abi::MatmulCall> attrs = abi::MatmulCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("matmul");
  bool ta = attrs->transposeLhs, tb = attrs->transposeRhs;
  kernels::MatmulDims dims;
  LOOM_RETURN_IF_ERROR(kernels::checkMatmul(call.args, ta, tb, dims));
  const TensorRef &a = call.args[0], &b = call.args[1], &out = call.args[2];
  int64_t rb = b.rank(), m = dims.m, n = dims.n, k = dims.k;
  const std::vector<int64_t> &batch = dims.batch, &strideA = dims.strideA,
                             &strideB = dims.strideB;
  size_t rank = batch.size();
  int64_t batches = product(batch, 0, rank);
  if (batches == 0 || m == 0 || n == 0)
    return Status::success();

  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  int64_t batchesB = product(b.shape, 0, rb - 2);
  // The product of one pair of matrices, f32 or bf16 factors (elements of
  // the factors' type from the base pointers).
  bool bf16 = dims.factors == DType::BF16;
  auto gemm = [&](int64_t rows, int64_t ea, int64_t eb, float *c) {
    if (bf16)
      bf16Gemm(ta, tb, rows, n, k, a.bf16() + ea, lda, b.bf16() + eb, ldb, c,
               n);
    else
      sgemm(ta, tb, rows, n, k, 1.0f, a.f32() + ea, lda, b.f32() + eb, ldb,
            0.0f, c, n);
  };
  if (batchesB == 1 && !ta) {
    // One rhs matrix: every lhs row is a row of one [batches * m, k] GEMM.
    gemm(batches * m, 0, 0, out.f32());
    return Status::success();
  }
  // Walk the batch index like an odometer, moving each operand by its
  // stride: no division per matrix.
  std::vector<int64_t> index(rank, 0);
  int64_t pa = 0, pb = 0;
  float *pc = out.f32();
  for (int64_t i = 0; i < batches; ++i) {
    gemm(m, pa, pb, pc);
    pc += m * n;
    for (size_t d = rank; d-- > 0;) {
      pa += strideA[d];
      pb += strideB[d];
      if (++index[d] < batch[d])
        break;
      pa -= strideA[d] * batch[d];
      pb -= strideB[d] * batch[d];
      index[d] = 0;
    }
  }
  return Status::success();
}
