//===- AttentionBackward.cpp - loom.attention_grad on the CPU -------------===//
//
// "attention_grad", whose call AttentionKernels.cpp checks. With P the
// probabilities recomputed from the forward's lse, exp(S - lse), and Z the
// dropout factors:
//
//   dV = (P Z)^T dO,  dP = (dO V^T) Z,  delta = rowsum(P dP),
//   dS = P (dP - delta) scale,  dQ = dS K,  dK = dS^T Q.
//
// delta is summed from the recomputed P and dP, as the interpreter does, not
// taken as rowsum(dout * out). The two agree when `out` is the forward's
// result and lse is exact, but where lse is not only the first matches the
// oracle; `out` is checked for shape and otherwise unused. A row whose every
// key is masked has an lse near -1e9, where floats lie 64 apart: such an lse
// (kCoarseLse or more in magnitude) is recomputed from the scores, as the
// op says (recomputeCoarseLse), since P would otherwise be off by up to e^32.
//
// One task per batch entry (batch * heads): it owns that entry's dk and dv,
// so they accumulate without races or a reduction, and the results do not
// depend on the pool's size. A task transposes its k and v once, then walks
// query tiles; a tile keeps P and dP for all keys, because delta needs whole
// rows before any dS can be formed, and it has fewer rows the longer the
// keys, so that this stays at most kTileFloats per buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/AttentionKernels.h"
#include "runtime/cpu/AttentionTiles.h"
#include "runtime/cpu/ThreadPool.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace loom::cpu;
using namespace loom::cpu::attention;
using loom::Status;

namespace {

constexpr int64_t kTileFloats = 16384;
constexpr int64_t kMaxTileRows = 64;
constexpr int64_t kMinTaskWork = 1 << 16;

struct Gradients {
  const float *lse, *dout;
  float *dq, *dk, *dv;
};

/// lseRow[r] = log(sum_j exp(S[r][j] + bias[r][j])) relative to the row's
/// shift, for the `coarse` rows, from the scores themselves (what
/// loom.attention_grad says for an lse of kCoarseLse or more in magnitude).
/// `scores` is a [rows, ld] scratch.
LOOM_ATTENTION_INLINE void
recomputeCoarseLse(const Problem &p, int64_t maskBase, int64_t i0, int64_t rows,
                   const float *qt, const float *kt, int64_t ld,
                   const double *shift, const std::vector<char> &coarse,
                   float *bias, float *scores, float *lseRow) {
  const int64_t bk = kKeyBlock, d = p.d;
  std::vector<double> top(rows, -std::numeric_limits<double>::infinity());
  std::vector<double> sum(rows, 0.0);
  for (int64_t j0 = 0; j0 < p.sk; j0 += bk) {
    int64_t cols = std::min(bk, p.sk - j0);
    if (p.hasBias() &&
        !fillBias(p, maskBase, i0, rows, j0, cols, shift, bias, bk))
      continue;
    float *sb = scores + j0;
    gemm<false>(rows, roundUp(cols, kLanes), d, qt, d, 1, kt + j0, ld, sb, ld);
    for (int64_t r = 0; r < rows; ++r) {
      if (!coarse[r])
        continue;
      for (int64_t c = 0; c < cols; ++c) {
        double x = double(sb[r * ld + c]) * p.scale +
                   (p.hasBias() ? double(bias[r * bk + c]) : 0.0);
        if (x > top[r]) {
          sum[r] = sum[r] * std::exp(top[r] - x) + 1.0;
          top[r] = x;
        } else {
          sum[r] += std::exp(x - top[r]);
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    if (coarse[r] && sum[r] > 0)
      lseRow[r] = static_cast<float>(top[r] + std::log(sum[r]));
}

LOOM_ATTENTION_CLONES
void backwardEntry(const Problem &p, int64_t b, const Gradients &g) {
  const int64_t d = p.d, dv = p.dv, sq = p.sq, sk = p.sk, bk = kKeyBlock;
  const int64_t ld = roundUp(std::max<int64_t>(sk, 1), kLanes);
  const int64_t tile =
      std::min(std::clamp(kTileFloats / ld, int64_t(1), kMaxTileRows),
               std::max<int64_t>(sq, 1));
  const int64_t blocks = (sk + bk - 1) / bk;
  Scratch &scratch = threadScratch();
  float *kt = scratch.take((d + dv) * ld + 2 * tile * ld + 2 * tile * bk + bk +
                           2 * tile + 2 * blocks);
  float *vt = kt + d * ld, *pAll = vt + dv * ld, *dpAll = pAll + tile * ld;
  float *bias = dpAll + tile * ld, *pz = bias + tile * bk, *z = pz + tile * bk;
  float *lseRow = z + bk, *delta = lseRow + tile, *live = delta + tile;
  // Whether a key block's dk and dv rows hold a sum yet: the first
  // contribution is stored rather than added, so nothing is zeroed first.
  float *written = live + blocks;
  double *shift = scratch.takeDoubles(tile);
  std::vector<char> coarse(tile);

  const float *qb = p.q + b * sq * d, *kb = p.k + b * sk * d;
  const float *dob = g.dout + b * sq * dv;
  float *dqb = g.dq + b * sq * d, *dkb = g.dk + b * sk * d,
        *dvb = g.dv + b * sk * dv;
  transpose(kb, sk, d, d, kt, ld);
  transpose(p.v + b * sk * dv, sk, dv, dv, vt, ld);
  int64_t maskBase = p.mask ? p.maskBase(b) : 0;
  std::fill(written, written + blocks, 0.0f);

  for (int64_t i0 = 0; i0 < sq; i0 += tile) {
    const int64_t rows = std::min(tile, sq - i0);
    const float *qt = qb + i0 * d, *dot = dob + i0 * dv;
    float *dqt = dqb + i0 * d;
    rowShifts(p, maskBase, i0, rows, shift);
    bool anyCoarse = false;
    for (int64_t r = 0; r < rows; ++r) {
      double given = g.lse[b * sq + i0 + r];
      lseRow[r] = static_cast<float>(given - shift[r]);
      delta[r] = 0;
      coarse[r] = std::abs(given) >= kCoarseLse;
      anyCoarse |= coarse[r];
    }
    if (anyCoarse)
      recomputeCoarseLse(p, maskBase, i0, rows, qt, kt, ld, shift, coarse,
                         bias, pAll, lseRow);

    // P, dP (with dropout applied), dV and delta, block by block.
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t j0 = blk * bk, cols = std::min(bk, sk - j0);
      bool isLive = !p.hasBias() ||
                    fillBias(p, maskBase, i0, rows, j0, cols, shift, bias, bk);
      live[blk] = isLive;
      if (!isLive)
        continue;
      float *pb = pAll + j0, *dpb = dpAll + j0;
      int64_t padded = roundUp(cols, kLanes);
      gemm<false>(rows, padded, d, qt, d, 1, kt + j0, ld, pb, ld);
      gemm<false>(rows, padded, dv, dot, dv, 1, vt + j0, ld, dpb, ld);
      const int64_t cols8 = roundUp(cols, 8);
      const Vec8 scale = splat8(p.scale);
      for (int64_t r = 0; r < rows; ++r) {
        float *pr = pb + r * ld, *dpr = dpb + r * ld;
        const float *br = bias + r * bk;
        Vec8 l = splat8(lseRow[r]);
        for (int64_t c = 0; c < cols8; c += 8) {
          Vec8 x = load8(pr + c) * scale - l;
          store8(pr + c, exp8(p.hasBias() ? x + load8(br + c) : x));
        }
        // The padding lanes up to cols8 carry nothing.
        for (int64_t c = cols; c < cols8; ++c)
          pr[c] = dpr[c] = 0.0f;
        if (p.dropout()) {
          keepFactors(p, b, i0 + r, j0, cols, z);
          float *pzr = pz + r * bk;
          for (int64_t c = 0; c < cols8; c += 8) {
            Vec8 zc = load8(z + c);
            store8(pzr + c, load8(pr + c) * zc);
            store8(dpr + c, load8(dpr + c) * zc);
          }
        }
        delta[r] += rowDot(pr, dpr, cols8);
      }
      // dV[j] += sum_r (P Z)[r][j] dO[r]: P Z read transposed.
      const float *pzb = p.dropout() ? pz : pb;
      int64_t pzStride = p.dropout() ? bk : ld;
      if (written[blk] != 0.0f)
        gemm<true>(cols, dv, rows, pzb, 1, pzStride, dot, dv, dvb + j0 * dv,
                   dv);
      else
        gemm<false>(cols, dv, rows, pzb, 1, pzStride, dot, dv, dvb + j0 * dv,
                    dv);
    }

    // dS over P in place, then dQ and dK.
    bool dqWritten = false;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      if (live[blk] == 0.0f)
        continue;
      int64_t j0 = blk * bk, cols = std::min(bk, sk - j0);
      float *pb = pAll + j0;
      const float *dpb = dpAll + j0;
      const int64_t cols8 = roundUp(cols, 8);
      const Vec8 scale = splat8(p.scale);
      for (int64_t r = 0; r < rows; ++r) {
        float *pr = pb + r * ld;
        const float *dpr = dpb + r * ld;
        Vec8 dr = splat8(delta[r]);
        for (int64_t c = 0; c < cols8; c += 8)
          store8(pr + c, load8(pr + c) * (load8(dpr + c) - dr) * scale);
      }
      if (dqWritten)
        gemm<true>(rows, d, cols, pb, ld, 1, kb + j0 * d, d, dqt, d);
      else
        gemm<false>(rows, d, cols, pb, ld, 1, kb + j0 * d, d, dqt, d);
      dqWritten = true;
      if (written[blk] != 0.0f)
        gemm<true>(cols, d, rows, pb, 1, ld, qt, d, dkb + j0 * d, d);
      else
        gemm<false>(cols, d, rows, pb, 1, ld, qt, d, dkb + j0 * d, d);
      written[blk] = 1.0f;
    }
    if (!dqWritten)
      std::fill(dqt, dqt + rows * d, 0.0f);
  }
  // Keys that no query attends to.
  for (int64_t blk = 0; blk < blocks; ++blk) {
    if (written[blk] != 0.0f)
      continue;
    int64_t j0 = blk * bk, cols = std::min(bk, sk - j0);
    std::fill(dkb + j0 * d, dkb + (j0 + cols) * d, 0.0f);
    std::fill(dvb + j0 * dv, dvb + (j0 + cols) * dv, 0.0f);
  }
}

} // namespace

Status loom::cpu::attentionBackward(const KernelCall &call) {
  Problem p;
  std::vector<const TensorRef *> rest;
  LOOM_RETURN_IF_ERROR(prepareAttention(call, /*backward=*/true, p, rest));
  Gradients g{rest[1]->f32(), rest[2]->f32(), rest[3]->f32(), rest[4]->f32(),
              rest[5]->f32()};
  int64_t work = std::max<int64_t>(1, p.sq * p.sk * (p.d + p.dv));
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      backwardEntry(p, b, g);
  };
  if (call.pool && call.pool->size() > 1)
    call.pool->parallelFor(p.batch, std::max<int64_t>(1, kMinTaskWork / work),
                           body);
  else
    body(0, p.batch);
  return Status::success();
}
