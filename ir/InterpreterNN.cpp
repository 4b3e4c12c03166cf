//===- InterpreterNN.cpp - Contractions, reductions and NN kernels --------===//
//
// Matmul walks each matrix in i-k-j order, with transposed operands packed
// first, so the inner loop reads contiguous memory; batch dims broadcast
// through per-matrix strides. Softmax, log-softmax and the cross
// entropy subtract the row maximum before exponentiating.
//
//===----------------------------------------------------------------------===//

#include "abi/CounterRng.h"
#include "ir/InterpreterKernels.h"
#include "ir/LoomDialect.h"

#include <cmath>
#include <limits>

using namespace loom;
using namespace loom::interp;

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// C[M,N] = A[M,K] * B[K,N], all row-major, in i-k-j order: the inner loop
/// streams a row of B into a row of C, which vectorizes.
static void matmulKernel(const double *a, const double *b, double *c, int64_t m,
                         int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    double *cr = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      double av = a[i * k + p];
      const double *br = b + p * n;
      for (int64_t j = 0; j < n; ++j)
        cr[j] += av * br[j];
    }
  }
}

/// Transposes the row-major [rows, cols] matrix `src` into `dst`.
static void transposeInto(const double *src, int64_t rows, int64_t cols,
                          std::vector<double> &dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
}

llvm::Expected<HostTensor> interp::matmul(const HostTensor &lhs,
                                          const HostTensor &rhs, bool ta,
                                          bool tb, DType kind) {
  int64_t ra = lhs.rank(), rb = rhs.rank();
  if (ra < 2 || rb < 2)
    return kernelError("needs operands of rank 2 or more, got " +
                       shapeString(lhs.shape) + " and " +
                       shapeString(rhs.shape));
  int64_t m = lhs.shape[ta ? ra - 1 : ra - 2];
  int64_t k = lhs.shape[ta ? ra - 2 : ra - 1];
  int64_t kb = rhs.shape[tb ? rb - 1 : rb - 2];
  int64_t n = rhs.shape[tb ? rb - 2 : rb - 1];
  if (k != kb)
    return kernelError("contraction sizes differ: lhs " +
                       shapeString(lhs.shape) + (ta ? " (transposed)" : "") +
                       " has K=" + llvm::Twine(k) + " but rhs " +
                       shapeString(rhs.shape) + (tb ? " (transposed)" : "") +
                       " has K=" + llvm::Twine(kb));
  llvm::ArrayRef<int64_t> batchA(lhs.shape.data(), ra - 2),
      batchB(rhs.shape.data(), rb - 2);
  auto batch = broadcastPair(batchA, batchB);
  if (!batch) {
    llvm::consumeError(batch.takeError());
    return kernelError(
        "batch dims do not broadcast: " + shapeString(lhs.shape) + " and " +
        shapeString(rhs.shape));
  }
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  HostTensor out(shape, kind);

  // Batch strides in elements: one step of a batch index moves one matrix.
  Shape sa = broadcastStrides(batchA, *batch),
        sb = broadcastStrides(batchB, *batch), so = stridesOf(*batch);
  for (int64_t &s : sa)
    s *= m * k;
  for (int64_t &s : sb)
    s *= k * n;
  for (int64_t &s : so)
    s *= m * n;
  if (m == 0 || n == 0)
    return out;
  // Transposed operands are packed into row-major copies; a matrix shared
  // by every batch (a weight) is packed once.
  std::vector<double> packedA(ta ? m * k : 0), packedB(tb ? k * n : 0);
  const double *lastA = nullptr, *lastB = nullptr;
  const double *a = lhs.data.data(), *b = rhs.data.data();
  double *c = out.data.data();
  forEachRow<3>(*batch, {so.data(), sa.data(), sb.data()},
                [&](const std::array<int64_t, 3> &o, int64_t count,
                    const std::array<int64_t, 3> &s) {
                  for (int64_t i = 0; i < count; ++i) {
                    const double *am = a + o[1] + i * s[1];
                    const double *bm = b + o[2] + i * s[2];
                    if (ta) {
                      if (am != lastA)
                        transposeInto(am, k, m, packedA);
                      lastA = am;
                      am = packedA.data();
                    }
                    if (tb) {
                      if (bm != lastB)
                        transposeInto(bm, n, k, packedB);
                      lastB = bm;
                      bm = packedB.data();
                    }
                    matmulKernel(am, bm, c + o[0] + i * s[0], m, k, n);
                  }
                });
  return out;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> interp::reduce(ReduceFn fn, const HostTensor &input,
                                          llvm::ArrayRef<int64_t> dims,
                                          bool keepDims, DType kind) {
  int64_t rank = input.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || reduced[d])
      return kernelError("cannot reduce dim " + llvm::Twine(d) + " of " +
                         shapeString(input.shape));
    reduced[d] = true;
  }
  Shape kept(input.shape), shape;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      count *= input.shape[i];
      kept[i] = 1;
      if (keepDims)
        shape.push_back(1);
    } else {
      shape.push_back(input.shape[i]);
    }
  }
  Shape strides = stridesOf(kept);
  for (int64_t i = 0; i < rank; ++i)
    if (reduced[i])
      strides[i] = 0;
  HostTensor out(shape, kind);
  if (fn != ReduceFn::Max) {
    stridedAccumulate(input.shape, input.data.data(), strides, out.data.data());
    if (fn == ReduceFn::Mean)
      for (double &v : out.data)
        v /= static_cast<double>(count);
    return out;
  }
  std::fill(out.data.begin(), out.data.end(),
            -std::numeric_limits<double>::infinity());
  Shape inStrides = stridesOf(input.shape);
  const double *src = input.data.data();
  double *dst = out.data.data();
  forEachRow<2>(input.shape, {inStrides.data(), strides.data()},
                [&](const std::array<int64_t, 2> &o, int64_t n,
                    const std::array<int64_t, 2> &s) {
                  for (int64_t i = 0; i < n; ++i) {
                    double v = src[o[0] + i];
                    double &acc = dst[o[1] + i * s[1]];
                    // NaN wins, as in torch.amax.
                    if (v > acc || std::isnan(v))
                      acc = v;
                  }
                });
  return out;
}

//===----------------------------------------------------------------------===//
// Softmax and layer norm
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> interp::softmax(const HostTensor &input,
                                           int64_t axis, bool log, DType kind) {
  int64_t rank = input.rank();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return kernelError("axis " + llvm::Twine(axis) + " is out of range for " +
                       shapeString(input.shape));
  int64_t outer = 1, inner = 1, n = input.shape[axis];
  for (int64_t i = 0; i < axis; ++i)
    outer *= input.shape[i];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= input.shape[i];
  HostTensor out(input.shape, kind);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const double *x = input.data.data() + o * n * inner + in;
      double *y = out.data.data() + o * n * inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i)
        mx = std::max(mx, x[i * inner]);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i)
        sum += std::exp(x[i * inner] - mx);
      if (log) {
        double lse = mx + std::log(sum);
        for (int64_t i = 0; i < n; ++i)
          y[i * inner] = x[i * inner] - lse;
      } else {
        for (int64_t i = 0; i < n; ++i)
          y[i * inner] = std::exp(x[i * inner] - mx) / sum;
      }
    }
  return out;
}

llvm::Expected<HostTensor> interp::layerNorm(const HostTensor &input,
                                             const HostTensor &gamma,
                                             const HostTensor &beta,
                                             double epsilon, DType kind) {
  if (input.rank() < 1)
    return kernelError("needs an input of rank 1 or more");
  int64_t d = input.shape.back();
  if (gamma.shape != Shape{d} || beta.shape != Shape{d})
    return kernelError("input " + shapeString(input.shape) +
                       " needs gamma and beta of shape " + llvm::Twine(d) +
                       ", got " + shapeString(gamma.shape) + " and " +
                       shapeString(beta.shape));
  HostTensor out(input.shape, kind);
  int64_t rows = d ? input.numel() / d : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double *x = input.data.data() + r * d;
    double *y = out.data.data() + r * d;
    double mean = 0;
    for (int64_t i = 0; i < d; ++i)
      mean += x[i];
    mean /= d;
    double var = 0;
    for (int64_t i = 0; i < d; ++i)
      var += (x[i] - mean) * (x[i] - mean);
    var /= d;
    double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t i = 0; i < d; ++i)
      y[i] = (x[i] - mean) * inv * gamma.data[i] + beta.data[i];
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Dropout and masks
//===----------------------------------------------------------------------===//

llvm::Expected<HostTensor> interp::dropout(const HostTensor &input,
                                           const HostTensor &seed, double rate,
                                           int64_t offset, DType kind) {
  if (seed.numel() != 1)
    return kernelError("seed must hold one value, got " +
                       shapeString(seed.shape));
  if (!(rate >= 0.0 && rate < 1.0))
    return kernelError("rate must be in [0, 1), got " + valueString(rate));
  double s = seed.data[0];
  if (!(std::fabs(s) < 9.2e18))
    return kernelError("seed " + valueString(s) + " is not an i64 value");
  uint64_t key = dropoutKey(static_cast<uint64_t>(static_cast<int64_t>(s)),
                            static_cast<uint64_t>(offset));
  double scale = 1.0 / (1.0 - rate);
  HostTensor out(input.shape, kind);
  for (int64_t i = 0, n = input.numel(); i < n; ++i)
    out.data[i] = dropoutKeep(key, static_cast<uint64_t>(i), rate)
                      ? input.data[i] * scale
                      : 0.0;
  return out;
}

/// kMaskedScore, or the lowest finite value where the element type cannot
/// hold it (f16), so a masked score stays finite as the mask ops promise.
static double maskedScore(DType kind) {
  return kind == DType::F16 ? std::max(kMaskedScore, -65504.0) : kMaskedScore;
}

llvm::Expected<HostTensor> interp::causalMask(const HostTensor &like,
                                              int64_t dim, DType kind) {
  if (dim < 0 || dim >= like.rank())
    return kernelError("dim " + llvm::Twine(dim) + " is out of range for " +
                       shapeString(like.shape));
  int64_t n = like.shape[dim];
  HostTensor out({n, n}, kind);
  double masked = maskedScore(kind);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      out.data[i * n + j] = masked;
  return out;
}

llvm::Expected<HostTensor> interp::paddingMask(const HostTensor &ids,
                                               int64_t pad, DType kind) {
  if (ids.rank() != 2)
    return kernelError("ids must be [batch, length], got " +
                       shapeString(ids.shape));
  HostTensor out({ids.shape[0], 1, 1, ids.shape[1]}, kind);
  double masked = maskedScore(kind);
  for (int64_t i = 0, n = ids.numel(); i < n; ++i)
    out.data[i] = ids.data[i] == static_cast<double>(pad) ? masked : 0.0;
  return out;
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

/// Checks logits [..., C] against targets [...] (and `grad`, if given) and
/// each target id; returns C.
static llvm::Expected<int64_t> checkTargets(const HostTensor &logits,
                                            const HostTensor &targets,
                                            const HostTensor *grad,
                                            int64_t ignoreIndex) {
  llvm::ArrayRef<int64_t> l(logits.shape);
  if (l.empty() || l.drop_back() != llvm::ArrayRef<int64_t>(targets.shape))
    return kernelError("logits " + shapeString(logits.shape) +
                       " do not match targets " + shapeString(targets.shape));
  if (grad && grad->shape != targets.shape)
    return kernelError("grad " + shapeString(grad->shape) +
                       " does not match targets " + shapeString(targets.shape));
  int64_t c = l.back();
  for (double t : targets.data)
    if (t != static_cast<double>(ignoreIndex) &&
        !(t >= 0 && t < static_cast<double>(c)))
      return kernelError("target id " + valueString(t) + " is outside [0, " +
                         llvm::Twine(c) + ")");
  return c;
}

/// log(sum_c exp(x[c])), computed around the maximum.
static double logSumExp(const double *x, int64_t c) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < c; ++i)
    mx = std::max(mx, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < c; ++i)
    sum += std::exp(x[i] - mx);
  return mx + std::log(sum);
}

llvm::Expected<HostTensor> interp::crossEntropy(const HostTensor &logits,
                                                const HostTensor &targets,
                                                double eps, int64_t ignoreIndex,
                                                DType kind) {
  auto c = checkTargets(logits, targets, nullptr, ignoreIndex);
  if (!c)
    return c.takeError();
  HostTensor out(targets.shape, kind);
  for (int64_t r = 0, rows = targets.numel(); r < rows; ++r) {
    double t = targets.data[r];
    if (t == static_cast<double>(ignoreIndex))
      continue;
    const double *x = logits.data.data() + r * *c;
    double lse = logSumExp(x, *c);
    double sumLogp = 0;
    for (int64_t i = 0; i < *c; ++i)
      sumLogp += x[i] - lse;
    double logpT = x[static_cast<int64_t>(t)] - lse;
    out.data[r] = -(1.0 - eps) * logpT - eps / *c * sumLogp;
  }
  return out;
}

llvm::Expected<HostTensor>
interp::crossEntropyGrad(const HostTensor &logits, const HostTensor &targets,
                         const HostTensor &grad, double eps,
                         int64_t ignoreIndex, DType kind) {
  auto c = checkTargets(logits, targets, &grad, ignoreIndex);
  if (!c)
    return c.takeError();
  HostTensor out(logits.shape, kind);
  for (int64_t r = 0, rows = targets.numel(); r < rows; ++r) {
    double t = targets.data[r];
    if (t == static_cast<double>(ignoreIndex))
      continue;
    const double *x = logits.data.data() + r * *c;
    double *y = out.data.data() + r * *c;
    double lse = logSumExp(x, *c);
    double g = grad.data[r];
    for (int64_t i = 0; i < *c; ++i) {
      double q = eps / *c + (i == static_cast<int64_t>(t) ? 1.0 - eps : 0.0);
      y[i] = (std::exp(x[i] - lse) - q) * g;
    }
  }
  return out;
}
