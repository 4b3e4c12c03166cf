//===- InterpreterAttention.cpp - Fused attention on the host -------------===//
//
// loom.attention and loom.attention_grad, one query row at a time, as a
// FlashAttention kernel runs them: the forward keeps only each row's
// log-sum-exp, and the backward recomputes the row's probabilities from it.
// No buffer beyond one row of scores is allocated, so the oracle exercises
// the algorithm the device kernels run, not just the formula.
//
// Everything that decides which value an element gets follows the unfused
// graph exactly: a row's masks are summed before they are added to the
// scaled score (as `scores + (padding + causal)` adds them), the causal mask
// is loom.causal_mask's value, and dropout draws element [..., i, j] from the
// counter-based stream at its linear index in the [..., Sq, Sk] probability
// tensor, which is the index loom.dropout would give it.
//
//===----------------------------------------------------------------------===//

#include "abi/CounterRng.h"
#include "ir/InterpreterFused.h"
#include "ir/InterpreterKernels.h"

#include <cmath>
#include <limits>

using namespace loom;
using namespace loom::interp;

namespace {

/// The run-time geometry and attributes shared by the forward and backward.
/// q is [lead..., Sq, D], k [lead..., Sk, D], v [lead..., Sk, Dv].
struct AttentionRows {
  const HostTensor *q = nullptr, *k = nullptr, *v = nullptr;
  const HostTensor *mask = nullptr;
  Shape lead;
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
  /// The mask's strides over the scores [lead..., Sq, Sk] (0 on broadcast
  /// dims).
  Shape maskStrides;
  double scale = 1.0;
  bool causal = false;
  double masked = kMaskedScore;
  double rate = 0.0;
  uint64_t key = 0;

  /// The scores of query row `i` of batch `b` into `s` [Sk]: the scaled dot
  /// products plus the masks.
  void scores(int64_t b, int64_t i, double *s) const;

  /// 0 for a dropped probability, 1 / (1 - rate) for a kept one.
  double keepFactor(int64_t b, int64_t i, int64_t j) const {
    if (rate == 0.0)
      return 1.0;
    uint64_t index = static_cast<uint64_t>((b * sq + i) * sk + j);
    return dropoutKeep(key, index, rate) ? 1.0 / (1.0 - rate) : 0.0;
  }

  Shape rowShape() const {
    Shape s = lead;
    s.push_back(sq);
    return s;
  }
};

void AttentionRows::scores(int64_t b, int64_t i, double *s) const {
  const double *qi = q->data.data() + (b * sq + i) * d;
  const double *kb = k->data.data() + b * sk * d;
  // The mask's offset at [b..., i, 0]: unflatten the batch index.
  const double *maskRow = nullptr;
  int64_t maskCol = 0;
  if (mask) {
    int64_t rank = static_cast<int64_t>(lead.size());
    int64_t offset = i * maskStrides[rank], rest = b;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      offset += (rest % lead[dim]) * maskStrides[dim];
      rest /= lead[dim];
    }
    maskRow = mask->data.data() + offset;
    maskCol = maskStrides[rank + 1];
  }
  for (int64_t j = 0; j < sk; ++j) {
    const double *kj = kb + j * d;
    double dot = 0;
    for (int64_t t = 0; t < d; ++t)
      dot += qi[t] * kj[t];
    double bias = maskRow ? maskRow[j * maskCol] : 0.0;
    if (causal && j > i)
      bias += masked;
    s[j] = dot * scale + bias;
  }
}

/// Checks the operands against each other at run time and reads the
/// attributes. `fixed` is the number of operands before the optional mask
/// and seed (3 for the forward, 6 for the backward).
template <typename OpTy>
llvm::Expected<AttentionRows> prepare(OpTy op, Operands operands,
                                      size_t fixed) {
  AttentionRows a;
  a.q = operands[0];
  a.k = operands[1];
  a.v = operands[2];
  size_t next = fixed;
  if (op.getMask())
    a.mask = operands[next++];
  const HostTensor *seed = op.getSeed() ? operands[next++] : nullptr;

  const HostTensor &q = *a.q, &k = *a.k, &v = *a.v;
  int64_t r = q.rank();
  llvm::ArrayRef<int64_t> qs(q.shape), ks(k.shape), vs(v.shape);
  if (r < 2 || k.rank() != r || v.rank() != r ||
      qs.drop_back(2) != ks.drop_back(2) || qs.drop_back(2) != vs.drop_back(2))
    return kernelError("needs q, k and v of one rank (2 or more) with equal "
                       "leading dims, got " +
                       shapeString(qs) + ", " + shapeString(ks) + " and " +
                       shapeString(vs));
  if (qs[r - 1] != ks[r - 1] || ks[r - 2] != vs[r - 2])
    return kernelError("q " + shapeString(qs) + ", k " + shapeString(ks) +
                       " and v " + shapeString(vs) +
                       " do not fit [..., Sq, D], [..., Sk, D], [..., Sk, Dv]");
  a.lead.assign(qs.begin(), qs.end() - 2);
  a.batch = shapeNumel(a.lead);
  a.sq = qs[r - 2];
  a.d = qs[r - 1];
  a.sk = ks[r - 2];
  a.dv = vs[r - 1];

  if (a.mask) {
    Shape scores = a.rowShape();
    scores.push_back(a.sk);
    auto b = broadcastPair(a.mask->shape, scores);
    if (!b || *b != scores || a.mask->rank() > r) {
      if (!b)
        llvm::consumeError(b.takeError());
      return kernelError("mask " + shapeString(a.mask->shape) +
                         " does not broadcast to the scores " +
                         shapeString(scores));
    }
    a.maskStrides = broadcastStrides(a.mask->shape, scores);
  }

  a.scale = op.getScale().convertToDouble();
  a.causal = op.getCausal();
  // loom.causal_mask's value for this element type (f16 cannot hold -1e9).
  if (q.kind == DType::F16)
    a.masked = std::max(kMaskedScore, -65504.0);
  a.rate = op.getDropoutRate().convertToDouble();
  if (!(a.rate >= 0.0 && a.rate < 1.0))
    return kernelError("dropout_rate must be in [0, 1), got " +
                       valueString(a.rate));
  if (a.rate > 0.0) {
    if (!seed || seed->numel() != 1)
      return kernelError("dropout needs a seed holding one value");
    double s = seed->data[0];
    if (!(std::fabs(s) < 9.2e18))
      return kernelError("seed " + valueString(s) + " is not an i64 value");
    a.key = dropoutKey(static_cast<uint64_t>(static_cast<int64_t>(s)),
                       static_cast<uint64_t>(op.getDropoutOffset()));
  }
  return a;
}

} // namespace

/// A row's largest score and the sum of exp(score - largest): its
/// log-sum-exp is max + log(sum).
static std::pair<double, double> maxAndSum(const std::vector<double> &s) {
  double mx = -std::numeric_limits<double>::infinity();
  for (double x : s)
    mx = std::max(mx, x);
  double sum = 0;
  for (double x : s)
    sum += std::exp(x - mx);
  return {mx, sum};
}

llvm::Expected<Results> interp::evaluateAttention(AttentionOp op,
                                                  Operands operands) {
  // Keys held position first, [Sk, ..., D]: the same attention over them
  // moved to [..., Sk, D].
  std::vector<HostTensor> moved;
  std::vector<const HostTensor *> list(operands.begin(), operands.end());
  if (op.getKeysPositionMajor()) {
    for (int i : {1, 2}) {
      int64_t r = list[i]->rank();
      if (r < 2)
        return kernelError("keys_position_major needs k and v of rank 2 or "
                           "more, got " +
                           shapeString(list[i]->shape));
      Shape perm;
      for (int64_t d = 1; d < r - 1; ++d)
        perm.push_back(d);
      perm.push_back(0);
      perm.push_back(r - 1);
      auto t = transpose(*list[i], perm);
      if (!t)
        return t.takeError();
      moved.push_back(std::move(*t));
    }
    list[1] = &moved[0];
    list[2] = &moved[1];
  }
  operands = list;
  auto prepared = prepare(op, operands, 3);
  if (!prepared)
    return prepared.takeError();
  const AttentionRows &a = *prepared;
  DType kind = a.q->kind;
  Shape outShape = a.rowShape(), lseShape = a.rowShape();
  outShape.push_back(a.dv);
  HostTensor out(outShape, kind), lse(lseShape, kind);

  std::vector<double> s(a.sk);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t i = 0; i < a.sq; ++i) {
      a.scores(b, i, s.data());
      auto [mx, sum] = maxAndSum(s);
      lse.data[b * a.sq + i] = mx + std::log(sum);
      // Probabilities as loom.softmax forms them, so the fused op matches
      // the unfused graph to the last bit wherever the scale is exact.
      double *o = out.data.data() + (b * a.sq + i) * a.dv;
      const double *vb = a.v->data.data() + b * a.sk * a.dv;
      for (int64_t j = 0; j < a.sk; ++j) {
        double p = std::exp(s[j] - mx) / sum * a.keepFactor(b, i, j);
        const double *vj = vb + j * a.dv;
        for (int64_t t = 0; t < a.dv; ++t)
          o[t] += p * vj[t];
      }
    }
  Results results;
  results.push_back(std::move(out));
  results.push_back(std::move(lse));
  return results;
}

llvm::Expected<Results> interp::evaluateAttentionGrad(AttentionGradOp op,
                                                      Operands operands) {
  auto prepared = prepare(op, operands, 6);
  if (!prepared)
    return prepared.takeError();
  const AttentionRows &a = *prepared;
  const HostTensor &out = *operands[3], &lse = *operands[4],
                   &dout = *operands[5];
  Shape outShape = a.rowShape();
  outShape.push_back(a.dv);
  if (out.shape != outShape || dout.shape != outShape ||
      lse.shape != a.rowShape())
    return kernelError(
        "out " + shapeString(out.shape) + ", lse " + shapeString(lse.shape) +
        " and dout " + shapeString(dout.shape) + " must be " +
        shapeString(outShape) + ", " + shapeString(a.rowShape()) + " and " +
        shapeString(outShape));
  HostTensor dq(a.q->shape, a.q->kind), dk(a.k->shape, a.k->kind),
      dv(a.v->shape, a.v->kind);

  // With P = exp(S - lse) and Z the dropout factors:
  //   dV = (P Z)^T dO,  dP = (dO V^T) Z,  dS = P (dP - rowsum(dP P)),
  //   dQ = dS K scale,  dK = dS^T Q scale.
  std::vector<double> s(a.sk), p(a.sk), dp(a.sk);
  for (int64_t b = 0; b < a.batch; ++b) {
    const double *kb = a.k->data.data() + b * a.sk * a.d;
    const double *vb = a.v->data.data() + b * a.sk * a.dv;
    double *dkb = dk.data.data() + b * a.sk * a.d;
    double *dvb = dv.data.data() + b * a.sk * a.dv;
    for (int64_t i = 0; i < a.sq; ++i) {
      int64_t row = b * a.sq + i;
      a.scores(b, i, s.data());
      const double *doi = dout.data.data() + row * a.dv;
      double rowDot = 0;
      // An lse of kCoarseLse or more in magnitude (a row whose every key is
      // masked, near -1e9) is too coarse in float to give P back: the op
      // recomputes it from the scores.
      double rowLse = lse.data[row];
      if (std::abs(rowLse) >= kCoarseLse) {
        auto [mx, sum] = maxAndSum(s);
        rowLse = mx + std::log(sum);
      }
      for (int64_t j = 0; j < a.sk; ++j) {
        p[j] = std::exp(s[j] - rowLse);
        double z = a.keepFactor(b, i, j);
        const double *vj = vb + j * a.dv;
        double *dvj = dvb + j * a.dv;
        double dropped = 0;
        for (int64_t t = 0; t < a.dv; ++t) {
          dvj[t] += p[j] * z * doi[t];
          dropped += doi[t] * vj[t];
        }
        dp[j] = dropped * z;
        rowDot += dp[j] * p[j];
      }
      const double *qi = a.q->data.data() + row * a.d;
      double *dqi = dq.data.data() + row * a.d;
      for (int64_t j = 0; j < a.sk; ++j) {
        double ds = p[j] * (dp[j] - rowDot) * a.scale;
        const double *kj = kb + j * a.d;
        double *dkj = dkb + j * a.d;
        for (int64_t t = 0; t < a.d; ++t) {
          dqi[t] += ds * kj[t];
          dkj[t] += ds * qi[t];
        }
      }
    }
  }
  Results results;
  results.push_back(std::move(dq));
  results.push_back(std::move(dk));
  results.push_back(std::move(dv));
  return results;
}
