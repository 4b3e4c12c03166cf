//===- LossKernels.cpp - Cross entropy and its gradient -------------------===//
//
// One row of logits per target, each a whole vocabulary (37000 words for the
// base model): rows go to the pool, and within a row the max and then the
// sums are vectorized passes (VecMath.h), the scalars combined in double. With
// label smoothing eps over C classes,
//
//   loss = lse - (1 - eps) x[t] - eps/C sum_c x[c]      lse = log sum e^x
//   grad = (e^(x - lse) - q) g     q = eps/C + (1 - eps) [c == t]
//
// which is the ODS formula with logp = x - lse expanded. The gradient pass
// stores e^(x - max) while it sums them, then scales by g / sum: one exp per
// logit, and x - max is exact where it matters, unlike x - lse with lse
// rounded to float. It may overwrite the logits
// (the memory plan does that for the largest buffer of a training step), so
// a row is read whole for its statistics before any of it is written, and
// each element is then read before it is written. Both kernels take
// abi::CrossEntropyCall.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/VecMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace loom::cpu;
using loom::DType;
using loom::ErrorOr;
using loom::Status;

namespace {

struct LossShape {
  int64_t rows = 0, classes = 0, ignoreIndex = 0;
  double eps = 0;
};

/// Decodes the attributes and checks logits [..., C] against targets [...]
/// (and grad, if given), and every target id, before anything is written.
Status checkLoss(const KernelCall &call, const char *kernel,
                 const TensorRef *grad, const TensorRef &out,
                 const std::vector<int64_t> &outShape, LossShape &s) {
  ErrorOr<loom::abi::CrossEntropyCall> attrs =
      loom::abi::CrossEntropyCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext(kernel);
  const TensorRef &logits = call.args[0], &targets = call.args[1];
  LOOM_RETURN_IF_ERROR(loom::kernels::checkCrossEntropy(logits, targets, grad,
                                                        out, outShape, kernel));
  s.classes = logits.shape.back();
  s.rows = targets.numel();
  s.ignoreIndex = attrs->ignoreIndex;
  s.eps = attrs->labelSmoothing;
  for (int64_t r = 0; r < s.rows; ++r) {
    int64_t t = idAt(targets, r);
    if (t != s.ignoreIndex && (t < 0 || t >= s.classes))
      return loom::kernels::targetOutsideClasses(kernel, t, s.classes);
  }
  return Status::success();
}

int64_t rowGrain(int64_t classes) {
  return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(classes, 1));
}

/// One row's loss: lse - (1 - eps) x[t] - eps/C sum x.
template <typename V>
LOOM_VEC_INLINE float lossRow(const float *x, int64_t c, int64_t t,
                              double eps) {
  float mx = vec::rowMax<V>(x, c);
  double expSum, sum;
  vec::rowExpSums<V>(x, c, mx, expSum, sum);
  double lse = mx + std::log(expSum);
  return static_cast<float>(lse - (1.0 - eps) * x[t] - eps / c * sum);
}

/// One row's gradient, y = (softmax(x) - q) g; y may be x.
template <typename V>
LOOM_VEC_INLINE void gradRow(const float *x, float *y, int64_t c, int64_t t,
                             double g, double eps) {
  // The row's maximum and the target's logit first.
  float xt = x[t];
  float mx = vec::rowMax<V>(x, c);
  // y = e^(x - max) and their sum in one pass, then the scaling.
  double sum = vec::rowExpStore<V>(x, y, c, mx);
  vec::rowScaleSub<V>(y, c, static_cast<float>(g / sum),
                      static_cast<float>(eps / c * g));
  // The target's element in double: its q is close to its probability once
  // the model has learnt, and they cancel.
  double q = eps / c + (1.0 - eps);
  y[t] = static_cast<float>((std::exp(double(xt) - mx) / sum - q) * g);
}

float lossRowBase(const float *x, int64_t c, int64_t t, double eps) {
  return lossRow<vec::Vec4>(x, c, t, eps);
}
void gradRowBase(const float *x, float *y, int64_t c, int64_t t, double g,
                 double eps) {
  gradRow<vec::Vec4>(x, y, c, t, g, eps);
}
#if LOOM_HAVE_AVX2_PATH
LOOM_TARGET_AVX2 float lossRowAvx2(const float *x, int64_t c, int64_t t,
                                   double eps) {
  return lossRow<vec::Vec8>(x, c, t, eps);
}
LOOM_TARGET_AVX2 void gradRowAvx2(const float *x, float *y, int64_t c,
                                  int64_t t, double g, double eps) {
  gradRow<vec::Vec8>(x, y, c, t, g, eps);
}
#endif

} // namespace

Status loom::cpu::crossEntropyKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 3, "cross_entropy"));
  LossShape s;
  const TensorRef &targets = call.args[1], &out = call.args[2];
  LOOM_RETURN_IF_ERROR(
      checkLoss(call, "cross_entropy", nullptr, out, targets.shape, s));
  const float *logits = call.args[0].f32();
  float *loss = out.f32();
  auto row = lossRowBase;
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    row = lossRowAvx2;
#endif
  // With no classes every target is ignored (checkLoss saw to that).
  parallelRange(
      call.pool, s.rows, rowGrain(s.classes), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t t = idAt(targets, r);
          loss[r] = t == s.ignoreIndex
                        ? 0.0f
                        : row(logits + r * s.classes, s.classes, t, s.eps);
        }
      });
  return Status::success();
}

Status loom::cpu::crossEntropyGradKernel(const KernelCall &call) {
  LOOM_RETURN_IF_ERROR(checkArgCount(call, 4, "cross_entropy_grad"));
  LossShape s;
  const TensorRef &logits = call.args[0], &targets = call.args[1],
                  &grad = call.args[2], &out = call.args[3];
  LOOM_RETURN_IF_ERROR(
      checkLoss(call, "cross_entropy_grad", &grad, out, logits.shape, s));
  const float *x = logits.f32(), *g = grad.f32();
  float *y = out.f32();
  int64_t c = s.classes;
  auto row = gradRowBase;
#if LOOM_HAVE_AVX2_PATH
  if (avx2Enabled())
    row = gradRowAvx2;
#endif
  parallelRange(call.pool, s.rows, rowGrain(c),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    int64_t t = idAt(targets, r);
                    if (t == s.ignoreIndex)
                      std::memset(y + r * c, 0, c * sizeof(float));
                    else
                      row(x + r * c, y + r * c, c, t, g[r], s.eps);
                  }
                });
  return Status::success();
}
