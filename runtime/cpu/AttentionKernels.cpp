//===- AttentionKernels.cpp - Fused attention on the CPU ------------------===//
//
// "attention" (loom.attention) and the preparation of a call that
// "attention_grad" (AttentionBackward.cpp) shares; the checks themselves are
// runtime/AttentionChecks.cpp's, which the CUDA kernels make too. The
// tensors and attributes of both are those of abi::AttentionCall
// (abi/LibraryCalls.h has the layout).
//
// Every tensor is f32 except the seed (one i64), and the forward's keys and
// values, which may be bf16 (a decoder's caches at --precision bf16): they are
// widened to f32 as they are read, and every product, max and sum is the f32
// one the same values held in f32 would give, except that a decode step's
// scores sum their products in another order (load16Split). The values are
// those of the reference interpreter (ir/InterpreterAttention.cpp): the mask
// broadcasts to the scores [..., Sq, Sk] as numpy broadcasts; `causal` adds
// -1e9 where key j > query i, counted from the first key whatever Sq and Sk
// are (a one-query decode step attends only to key 0 under it); dropout
// keeps probability [..., i, j] as loom.dropout keeps element
// (b * Sq + i) * Sk + j of the probability tensor; lse is the log-sum-exp of
// each row of masked scores.
//
// Keys and values may be held position first ([Sk, ..., D], a decoder cache
// that grows by appending), which only changes the strides they are read
// with.
//
// The forward splits the queries of each batch entry into tiles of up to 64
// rows, one task each, and walks the keys in blocks of 64 with an online
// softmax (a running max and sum per row; the output accumulator is rescaled
// when the max grows), so a task holds one block of scores per row and never
// a row of the whole sequence. A decode step's few query rows take a path of
// their own (forwardQueryRow): all of a row's scores at once, without blocks.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/AttentionKernels.h"
#include "runtime/AttentionChecks.h"
#include "runtime/cpu/AttentionTiles.h"
#include "runtime/cpu/KernelUtil.h"
#include "runtime/cpu/ThreadPool.h"

#include <cmath>
#include <type_traits>

using namespace loom::cpu;
using namespace loom::cpu::attention;
using loom::ErrorOr;
using loom::Status;

namespace {

/// Query rows per forward task: a tile's scores, bias and accumulator stay in
/// L2 and every key block is transposed once for all of them.
constexpr int64_t kQueryTile = 64;
/// Tiles with fewer rows take dot products against the keys as they lie.
constexpr int64_t kTransposeMinRows = 4;
/// Multiply-adds a task should hold at least, so that pool overhead stays
/// small for the tiny problems of a decode step.
constexpr int64_t kMinTaskWork = 1 << 16;

} // namespace

Status attention::prepareAttention(const KernelCall &call, bool backward,
                                   Problem &p,
                                   std::vector<const TensorRef *> &rest) {
  // The checks are shared with the CUDA kernels (runtime/AttentionChecks.h);
  // only the seed's value is read here.
  ErrorOr<loom::kernels::AttentionShape> shape =
      loom::kernels::checkAttentionCall(call.args, call.attrs, backward);
  if (!shape)
    return shape.status();
  p = Problem();
  p.q = shape->q->f32();
  if (shape->k->dtype == loom::DType::BF16) {
    p.k16 = shape->k->bf16();
    p.v16 = shape->v->bf16();
  } else {
    p.k = shape->k->f32();
    p.v = shape->v->f32();
  }
  p.lead = std::move(shape->lead);
  p.batch = shape->batch;
  p.sq = shape->sq;
  p.d = shape->d;
  p.sk = shape->sk;
  p.dv = shape->dv;
  if (shape->attrs.keysPositionMajor) {
    p.keyStride = p.batch * p.d;
    p.keyBatchStride = p.d;
    p.valueStride = p.batch * p.dv;
    p.valueBatchStride = p.dv;
  } else {
    p.keyStride = p.d;
    p.keyBatchStride = p.sk * p.d;
    p.valueStride = p.dv;
    p.valueBatchStride = p.sk * p.dv;
  }
  if (shape->mask) {
    p.mask = shape->mask->f32();
    p.maskStrides = std::move(shape->maskStrides);
  }

  const loom::abi::AttentionCall &attrs = shape->attrs;
  p.scale = static_cast<float>(attrs.scale);
  p.causal = attrs.causal;
  // In [0, 1): AttentionCall::decode checked it; the checks saw the seed.
  p.rate = attrs.dropoutRate;
  if (p.rate > 0.0) {
    p.key = dropoutKey(static_cast<uint64_t>(shape->seed->i64()[0]),
                       attrs.dropoutOffset);
    p.keepScale = static_cast<float>(1.0 / (1.0 - p.rate));
    p.keepThreshold = static_cast<uint64_t>(std::ceil(std::ldexp(p.rate, 53)));
  }
  rest = std::move(shape->rest);
  return Status::success();
}

Scratch &attention::threadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

void attention::rowShifts(const Problem &p, int64_t maskBase, int64_t i0,
                          int64_t rows, double *shift) {
  int64_t cs = p.mask ? p.maskColStride() : 0;
  // A padding mask [B, 1, 1, Sk] gives every query row the same shift.
  bool sameRows = p.mask && p.maskRowStride() == 0 && !p.causal;
  for (int64_t r = 0; r < rows; ++r) {
    shift[r] = 0;
    if (!p.mask)
      continue; // causal alone never masks key 0
    if (sameRows && r > 0) {
      shift[r] = shift[0];
      continue;
    }
    int64_t i = i0 + r;
    const float *m = p.mask + maskBase + i * p.maskRowStride();
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < p.sk; ++j) {
      double x = m[j * cs];
      if (p.causal && j > i)
        x += kMaskedScore;
      top = std::max(top, x);
    }
    // A row of -inf (or NaN) keeps its values as they are.
    shift[r] = std::isfinite(top) ? top : 0.0;
  }
}

namespace {

/// Asks for `count` rows of `width` elements, `stride` apart, to be brought
/// into the cache. A decode step's cache is read position first: each
/// position's values of one head lie a whole row of hypotheses apart (16 KB at
/// 32 hypotheses of 128 features), a stride no hardware prefetcher follows
/// across pages, so each row would be a separate miss waited for in turn;
/// asked for before the scores are computed, they arrive side by side.
template <typename T>
inline void prefetchRows(const T *rows, int64_t count, int64_t stride,
                         int64_t width) {
  constexpr int64_t line = 64 / sizeof(T); // elements per 64-byte line
  for (int64_t r = 0; r < count; ++r)
    for (int64_t f = 0; f < width; f += line)
      __builtin_prefetch(rows + r * stride + f);
}

/// Output rows [i0, i0 + rows) of batch entry b, keys and values of type KV
/// (float, or bf16 as uint16_t: each block widened to f32 first).
template <typename KV>
LOOM_ATTENTION_INLINE void forwardTileOf(const Problem &p, int64_t b,
                                         int64_t i0, int64_t rows, float *out,
                                         float *lse) {
  constexpr bool wide = std::is_same_v<KV, float>;
  const int64_t bk = kKeyBlock, d = p.d, dv = p.dv;
  Scratch &scratch = threadScratch();
  float *s = scratch.take(2 * rows * bk + d * bk + rows * dv + 2 * rows + bk +
                          (wide ? 0 : bk * (d + dv)));
  float *bias = s + rows * bk, *kt = bias + rows * bk, *acc = kt + d * bk;
  float *rowMaxes = acc + rows * dv, *rowSums = rowMaxes + rows;
  float *z = rowSums + rows;
  float *kw = z + bk, *vw = kw + bk * d; // a widened block (bf16 only)
  double *shift = scratch.takeDoubles(rows);

  const float *qt = p.q + (b * p.sq + i0) * d;
  const KV *kb = p.keys<KV>() + b * p.keyBatchStride;
  const KV *vb = p.values<KV>() + b * p.valueBatchStride;
  int64_t maskBase = p.mask ? p.maskBase(b) : 0;
  rowShifts(p, maskBase, i0, rows, shift);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    rowMaxes[r] = -inf;
    rowSums[r] = 0;
  }
  std::fill(acc, acc + rows * dv, 0.0f);
  bool transposed = rows >= kTransposeMinRows;

  for (int64_t j0 = 0; j0 < p.sk; j0 += bk) {
    int64_t cols = std::min(bk, p.sk - j0);
    if (p.hasBias() &&
        !fillBias(p, maskBase, i0, rows, j0, cols, shift, bias, bk))
      continue;
    // The block's keys and values as f32 rows, ks and vs apart.
    const float *kr, *vr;
    int64_t ks, vs;
    if constexpr (wide) {
      kr = kb + j0 * p.keyStride;
      vr = vb + j0 * p.valueStride;
      ks = p.keyStride;
      vs = p.valueStride;
    } else {
      widenRows(kb + j0 * p.keyStride, cols, d, p.keyStride, kw);
      widenRows(vb + j0 * p.valueStride, cols, dv, p.valueStride, vw);
      kr = kw;
      vr = vw;
      ks = d;
      vs = dv;
    }
    if (transposed) {
      int64_t padded = roundUp(cols, kLanes);
      transpose(kr, cols, d, ks, kt, padded);
      gemm<false>(rows, padded, d, qt, d, 1, kt, padded, s, bk);
    } else {
      if constexpr (wide) {
        prefetchRows(kr, cols, ks, d);
        prefetchRows(vr, cols, vs, dv);
      }
      dotRows(rows, cols, d, qt, d, kr, ks, s, bk);
    }
    const int64_t cols8 = roundUp(cols, 8);
    const Vec8 scale = splat8(p.scale);
    for (int64_t r = 0; r < rows; ++r) {
      float *sr = s + r * bk;
      const float *br = bias + r * bk;
      for (int64_t c = 0; c < cols8; c += 8) {
        Vec8 x = load8(sr + c) * scale;
        store8(sr + c, p.hasBias() ? x + load8(br + c) : x);
      }
      for (int64_t c = cols; c < cols8; ++c)
        sr[c] = -inf;
      float mx = rowMax(sr, cols8, rowMaxes[r]);
      float base = mx == -inf ? 0.0f : mx;
      float alpha = fastExp(rowMaxes[r] - base);
      for (int64_t c = 0; c < cols8; c += 8)
        store8(sr + c, exp8(load8(sr + c) - base));
      rowSums[r] = rowSums[r] * alpha + rowSum(sr, cols8);
      rowMaxes[r] = mx;
      if (p.dropout()) {
        keepFactors(p, b, i0 + r, j0, cols, z);
        for (int64_t c = 0; c < cols8; c += 8)
          store8(sr + c, load8(sr + c) * load8(z + c));
      }
      if (alpha != 1.0f)
        for (float *a = acc + r * dv, *e = a + dv; a != e; ++a)
          *a *= alpha;
    }
    gemm<true>(rows, dv, cols, s, bk, 1, vr, vs, acc, dv);
  }

  for (int64_t r = 0; r < rows; ++r) {
    int64_t row = b * p.sq + i0 + r;
    float inv = rowSums[r] > 0 ? 1.0f / rowSums[r] : 0.0f;
    const float *a = acc + r * dv;
    float *o = out + row * dv;
    for (int64_t t = 0; t < dv; ++t)
      o[t] = a[t] * inv;
    lse[row] = static_cast<float>(shift[r] + double(rowMaxes[r]) +
                                  std::log(double(rowSums[r])));
  }
}

// One entry per element type, each compiled for AVX2 + FMA too.
LOOM_ATTENTION_CLONES
void forwardTile(const Problem &p, int64_t b, int64_t i0, int64_t rows,
                 float *out, float *lse) {
  forwardTileOf<float>(p, b, i0, rows, out, lse);
}
LOOM_ATTENTION_CLONES
void forwardTileBf16(const Problem &p, int64_t b, int64_t i0, int64_t rows,
                     float *out, float *lse) {
  forwardTileOf<uint16_t>(p, b, i0, rows, out, lse);
}

/// Keys whose scores forwardQueryRow holds on the stack; rows over more keys
/// go through forwardTile.
constexpr int64_t kQueryRowMaxKeys = 1024;
/// The largest head dim whose split query forwardQueryRow holds on the stack
/// for bf16 keys (larger ones widen in order).
constexpr int64_t kSplitMaxD = 256;

/// Lane i of the result is the sum of v[i]'s lanes: eight dot products
/// reduced together, 14 shuffles and 7 adds where eight sum8 take 48
/// operations.
LOOM_ATTENTION_INLINE Vec8 pairSums(Vec8 a, Vec8 b) {
  return LOOM_SHUFFLE8(a, b, 0, 2, 8, 10, 4, 6, 12, 14) +
         LOOM_SHUFFLE8(a, b, 1, 3, 9, 11, 5, 7, 13, 15);
}
LOOM_ATTENTION_INLINE Vec8 laneSums(const Vec8 (&v)[8]) {
  Vec8 low = pairSums(pairSums(v[0], v[1]), pairSums(v[2], v[3]));
  Vec8 high = pairSums(pairSums(v[4], v[5]), pairSums(v[6], v[7]));
  return LOOM_SHUFFLE8(low, high, 0, 1, 2, 3, 8, 9, 10, 11) +
         LOOM_SHUFFLE8(low, high, 4, 5, 6, 7, 12, 13, 14, 15);
}

/// Output row i of batch entry b when the entry has few queries (a decode
/// step: one per hypothesis, or a beam's queries against its sentence's
/// encoder keys): the scores of all its keys at once, eight keys a pass, then
/// their max, exponentials and sum, and the values' weighted sum in
/// registers; none of forwardTile's key blocks, transposes, bias tiles or
/// accumulator rescaling, which cost a decode step's rows (a few dozen keys
/// of 32 or 64 features) more than the arithmetic. Needs D and Dv multiples
/// of 8, no dropout, and at most kQueryRowMaxKeys keys (fewQueriesTake).
/// Keys and values of type KV: float, or bf16 (uint16_t) widened in
/// registers as they are loaded; batch entry b's first key at `kb`, the
/// next `ks` elements on (values: `vb`, `vs`).
template <typename KV>
LOOM_ATTENTION_INLINE void
forwardQueryRowOf(const Problem &p, int64_t b, int64_t i, const KV *kb,
                  int64_t ks, const KV *vb, int64_t vs, float *out,
                  float *lse) {
  int64_t sk = p.sk;
  const int64_t d = p.d, dv = p.dv;
  const int64_t row = b * p.sq + i;
  const float *q = p.q + row * d;
  int64_t maskBase = p.mask ? p.maskBase(b) : 0;
  // The keys the row's mask removes before its first kept one (a sentence
  // that joined a running batch does not attend to the positions decoded
  // before it) weigh exactly 0: the row starts at its first kept key, so
  // that it costs and sums as it would without them. Not when every key
  // is masked (the weights are then uniform).
  int64_t first = 0;
  if (p.mask && !p.causal) {
    const float *m = p.mask + maskBase + i * p.maskRowStride();
    int64_t cs = p.maskColStride();
    while (first < sk && m[first * cs] <= 0.5 * kMaskedScore)
      ++first;
    if (first == sk)
      first = 0;
  }
  kb += first * ks;
  vb += first * vs;
  sk -= first;
  if (ks != d && i == 0) {
    // Position first: see prefetchRows.
    prefetchRows(kb, sk, ks, d);
    prefetchRows(vb, sk, vs, dv);
  }
  double shift = 0;
  if (p.mask)
    rowShifts(p, maskBase, i, 1, &shift);
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t sk8 = roundUp(sk, 8);
  alignas(32) float s[kQueryRowMaxKeys];
  const Vec8 scale = splat8(p.scale);
  // bf16 keys and values sixteen at a time, split into even and odd
  // elements (load16Split): the query is split the same way once, and the
  // output's even and odd channels are put back in order at the end.
  constexpr bool narrow = std::is_same_v<KV, uint16_t>;
  const bool split = narrow && d % 16 == 0 && dv % 16 == 0 && d <= kSplitMaxD;
  alignas(32) float qSplit[narrow ? kSplitMaxD : 1];
  if constexpr (narrow)
    if (split)
      for (int64_t c = 0; c < d; c += 16)
        for (int64_t l = 0; l < 8; ++l) {
          qSplit[c + l] = q[c + 2 * l];
          qSplit[c + 8 + l] = q[c + 2 * l + 1];
        }
  for (int64_t j = 0; j < sk; j += 8) {
    // Keys past the last read the last again; their lanes become -inf.
    const KV *key[8];
    for (int g = 0; g < 8; ++g)
      key[g] = kb + std::min(j + g, sk - 1) * ks;
    Vec8 acc[8];
    for (int g = 0; g < 8; ++g)
      acc[g] = splat8(0.0f);
    if constexpr (narrow) {
      if (split) {
        for (int64_t t = 0; t < d; t += 16) {
          Vec8 xe = load8(qSplit + t), xo = load8(qSplit + t + 8);
          for (int g = 0; g < 8; ++g) {
            Vec8 ke, ko;
            load16Split(key[g] + t, ke, ko);
            acc[g] += xe * ke;
            acc[g] += xo * ko;
          }
        }
        store8(s + j, laneSums(acc) * scale);
        continue;
      }
    }
    for (int64_t t = 0; t < d; t += 8) {
      Vec8 x = load8(q + t);
      for (int g = 0; g < 8; ++g)
        acc[g] += x * load8(key[g] + t);
    }
    store8(s + j, laneSums(acc) * scale);
  }
  for (int64_t j = sk; j < sk8; ++j)
    s[j] = -inf;
  if (p.hasBias()) {
    int64_t cs = p.mask ? p.maskColStride() : 0;
    const float *m =
        p.mask ? p.mask + maskBase + i * p.maskRowStride() + first * cs
               : nullptr;
    for (int64_t j = 0; j < sk; ++j) {
      double x = (m ? double(m[j * cs]) : 0.0) - shift;
      if (p.causal && j > i)
        x += kMaskedScore;
      s[j] += static_cast<float>(x);
    }
  }
  float mx = rowMax(s, sk8, -inf);
  const Vec8 base = splat8(mx == -inf ? 0.0f : mx);
  Vec8 sums{};
  for (int64_t j = 0; j < sk8; j += 8) {
    Vec8 e = exp8(load8(s + j) - base);
    store8(s + j, e);
    sums += e;
  }
  float sum = sum8(sums);
  float inv = sum > 0 ? 1.0f / sum : 0.0f;
  float *o = out + row * dv;
  if constexpr (narrow) {
    if (split) {
      // Thirty-two channels at a time (then sixteen), as even and odd
      // halves, each summed over the keys in order as below.
      auto store = [&](int64_t at, Vec8 even, Vec8 odd) {
        store8(o + at,
               LOOM_SHUFFLE8(even, odd, 0, 8, 1, 9, 2, 10, 3, 11) * inv);
        store8(o + at + 8,
               LOOM_SHUFFLE8(even, odd, 4, 12, 5, 13, 6, 14, 7, 15) * inv);
      };
      int64_t c = 0;
      for (; c + 32 <= dv; c += 32) {
        Vec8 e0{}, o0{}, e1{}, o1{};
        for (int64_t j = 0; j < sk; ++j) {
          const uint16_t *vr = vb + j * vs + c;
          Vec8 w = splat8(s[j]), ve, vo;
          load16Split(vr, ve, vo);
          e0 += w * ve;
          o0 += w * vo;
          load16Split(vr + 16, ve, vo);
          e1 += w * ve;
          o1 += w * vo;
        }
        store(c, e0, o0);
        store(c + 16, e1, o1);
      }
      for (; c < dv; c += 16) {
        Vec8 e{}, od{};
        for (int64_t j = 0; j < sk; ++j) {
          Vec8 w = splat8(s[j]), ve, vo;
          load16Split(vb + j * vs + c, ve, vo);
          e += w * ve;
          od += w * vo;
        }
        store(c, e, od);
      }
      lse[row] = static_cast<float>(shift + double(mx) + std::log(double(sum)));
      return;
    }
  }
  // Four vectors of the output at a time (then one), each summed over the
  // keys in order.
  int64_t c = 0;
  for (; c + 32 <= dv; c += 32) {
    Vec8 a0{}, a1{}, a2{}, a3{};
    for (int64_t j = 0; j < sk; ++j) {
      const KV *vr = vb + j * vs + c;
      Vec8 w = splat8(s[j]);
      a0 += w * load8(vr);
      a1 += w * load8(vr + 8);
      a2 += w * load8(vr + 16);
      a3 += w * load8(vr + 24);
    }
    store8(o + c, a0 * inv);
    store8(o + c + 8, a1 * inv);
    store8(o + c + 16, a2 * inv);
    store8(o + c + 24, a3 * inv);
  }
  for (; c < dv; c += 8) {
    Vec8 a{};
    for (int64_t j = 0; j < sk; ++j)
      a += splat8(s[j]) * load8(vb + j * vs + c);
    store8(o + c, a * inv);
  }
  lse[row] = static_cast<float>(shift + double(mx) + std::log(double(sum)));
}

LOOM_ATTENTION_CLONES
void forwardQueryRow(const Problem &p, int64_t b, int64_t i, float *out,
                     float *lse) {
  forwardQueryRowOf<float>(p, b, i, p.k + b * p.keyBatchStride, p.keyStride,
                           p.v + b * p.valueBatchStride, p.valueStride, out,
                           lse);
}
LOOM_ATTENTION_CLONES
void forwardQueryRowBf16(const Problem &p, int64_t b, int64_t i, float *out,
                         float *lse) {
  forwardQueryRowOf<uint16_t>(p, b, i, p.k16 + b * p.keyBatchStride,
                              p.keyStride, p.v16 + b * p.valueBatchStride,
                              p.valueStride, out, lse);
}
/// Every query row of batch entry b over bf16 keys and values that the rows
/// share (a beam's queries against its sentence's source): the keys and
/// values are widened once, then read as f32 by each row, which would
/// otherwise widen each of them once per row.
LOOM_ATTENTION_CLONES
void forwardSharedKeysBf16(const Problem &p, int64_t b, float *out,
                           float *lse) {
  Scratch &scratch = threadScratch();
  float *kw = scratch.take(p.sk * (p.d + p.dv)), *vw = kw + p.sk * p.d;
  widenRows(p.k16 + b * p.keyBatchStride, p.sk, p.d, p.keyStride, kw);
  widenRows(p.v16 + b * p.valueBatchStride, p.sk, p.dv, p.valueStride, vw);
  for (int64_t i = 0; i < p.sq; ++i)
    forwardQueryRowOf<float>(p, b, i, kw, p.d, vw, p.dv, out, lse);
}

/// Query rows per batch entry up to which forwardQueryRow computes them
/// (a beam of up to eight); more go through forwardTile's transposed blocks.
constexpr int64_t kFewQueries = 8;

/// Whether forwardQueryRow computes p.
bool fewQueriesTake(const Problem &p) {
  return p.sq >= 1 && p.sq <= kFewQueries && !p.dropout() && p.sk > 0 &&
         p.sk <= kQueryRowMaxKeys && p.d % 8 == 0 && p.dv % 8 == 0;
}

} // namespace

Status loom::cpu::attentionForward(const KernelCall &call) {
  Problem p;
  std::vector<const TensorRef *> rest;
  LOOM_RETURN_IF_ERROR(prepareAttention(call, /*backward=*/false, p, rest));
  float *out = rest[0]->f32(), *lse = rest[1]->f32();
  if (fewQueriesTake(p) && p.bf16Keys() && p.sq > 1) {
    auto entries = [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b)
        forwardSharedKeysBf16(p, b, out, lse);
    };
    int64_t work = std::max<int64_t>(1, p.sq * p.sk * (p.d + p.dv));
    parallelRange(call.pool, p.batch, std::max<int64_t>(1, kMinTaskWork / work),
                  entries);
    return Status::success();
  }
  if (fewQueriesTake(p)) {
    auto rows = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        if (p.bf16Keys())
          forwardQueryRowBf16(p, row / p.sq, row % p.sq, out, lse);
        else
          forwardQueryRow(p, row / p.sq, row % p.sq, out, lse);
    };
    int64_t work = std::max<int64_t>(1, p.sk * (p.d + p.dv));
    parallelRange(call.pool, p.batch * p.sq,
                  std::max<int64_t>(1, kMinTaskWork / work), rows);
    return Status::success();
  }
  int64_t tiles = (p.sq + kQueryTile - 1) / kQueryTile;
  int64_t rowsPerTile = std::min(p.sq, kQueryTile);
  int64_t work = std::max<int64_t>(1, rowsPerTile * p.sk * (p.d + p.dv));
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t b = item / tiles, i0 = item % tiles * kQueryTile;
      int64_t rows = std::min(kQueryTile, p.sq - i0);
      if (p.bf16Keys())
        forwardTileBf16(p, b, i0, rows, out, lse);
      else
        forwardTile(p, b, i0, rows, out, lse);
    }
  };
  parallelRange(call.pool, p.batch * tiles,
                std::max<int64_t>(1, kMinTaskWork / work), body);
  return Status::success();
}
