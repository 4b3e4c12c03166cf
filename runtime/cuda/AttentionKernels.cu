//===- AttentionKernels.cu - Fused attention on the GPU -------------------===//
//
// The CUDA versions of "attention" and "attention_grad", whose CPU versions
// are runtime/cpu/AttentionKernels.cpp (the forward) and
// runtime/cpu/AttentionBackward.cpp (the backward); those files and
// runtime/cpu/AttentionTiles.h state the values, which these kernels compute
// the same way. In short, with S = q k^T scale + bias, where the bias is the
// mask (broadcast) plus -1e9 where key j > query i under `causal`, less the
// row's largest bias (its "shift", held in double), and Z the dropout
// factors:
//
//   forward   P = softmax(S), out = (P Z) v, lse = shift + max + log(sum)
//   backward  P = exp(S - (lse - shift)) (lse recomputed from S where it is
//             2^20 or more in magnitude), dV = (P Z)^T dO, dP = (dO v^T) Z,
//             delta = rowsum(P dP), dS = P (dP - delta) scale,
//             dQ = dS k, dK = dS^T q
//
// As FlashAttention-2 does, nothing of size [Sq, Sk] is stored: the forward
// walks the keys in blocks of 32 with an online softmax (a running max and
// sum, the output rescaled when the max grows), and the backward recomputes
// P from the saved lse.
//
// Forward: one warp per (query row, block of up to 256 output columns). Lane
// l scores key j0 + l of each block (a dot product over D, q read from
// global memory, where all lanes read the same word), the warp reduces the
// block's max and sum by shuffles, and then walks the block's keys, each lane
// adding p_j v[j][t] into the output columns t = lane, lane + 32, ... that it
// owns. Output rows wider than 256 columns take several warps, each
// recomputing the softmax: rare, and simpler than spilling.
//
// Backward, without atomics on floats, so that results are the same from
// run to run: (1) a warp per (query row, block of 256 columns of dQ) first
// finds the row's shift and delta over every key, then forms dS a block of
// keys at a time and accumulates dQ; column block 0 stores shift and delta in
// stream-ordered scratch. (2) A warp per (key row, block of 256 columns of dK
// and dV) walks the queries in blocks of 32, lane l recomputing P, dP and dS
// of query i0 + l against its key from the scratch, and accumulates dK and dV.
//
// Numerics that must match the CPU: the shift is the max in double of
// (mask + causal) over the keys (NaNs never win; a non-finite max gives 0);
// the bias is float(double(mask) - shift [+ -1e9]); scores whose bias is not
// above -5e8 (kDeadBias) are exactly zero, and skipped, as the CPU skips such
// blocks (which also keeps a row of -inf NaN-free); the softmax sum is of the
// probabilities before dropout; lse is computed in double; dropout keeps
// element (b Sq + i) Sk + j with abi/CounterRng.h's dropoutKeep, evaluated on
// the device from the seed in device memory, so the decisions are the CPU's
// bit for bit. exp is expf (the build has no fast math): within 2 ulp, as the
// CPU's exp.
//
// The arithmetic is fp32 on CUDA cores and the loads of k (one key row per
// lane) are not coalesced: this is the correct baseline. The next step is
// tiles of queries and keys in shared memory and tensor-core MMA in bf16
// (fp32 accumulation), as FlashAttention-2 does.
//
// Every launch is on the call's stream; nothing waits for it.
//
//===----------------------------------------------------------------------===//

#include "runtime/AttentionChecks.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include "abi/CounterRng.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

using loom::ErrorCode;
using loom::ErrorOr;
using loom::Status;
using loom::cuda::CudaKernelCall;
using loom::cuda::launched;
using loom::cuda::StreamScratch;
using loom::kernels::AttentionShape;

namespace {

constexpr int kWarpSize = 32;
constexpr int kWarps = 4; // per block
constexpr int kThreads = kWarps * kWarpSize;
/// Output columns per warp: 8 accumulators per lane.
constexpr int kColsPerLane = 8;
constexpr int64_t kColBlock = kColsPerLane * kWarpSize;
/// Blocks of one launch; further work items loop over the grid.
constexpr int64_t kMaxBlocks = 1 << 20;
/// The rank of the scores [lead..., Sq, Sk] that a mask may broadcast over.
constexpr int kMaxRank = 8;
/// runtime/cpu/AttentionTiles.h's kMaskedScore and kDeadBias.
constexpr double kMaskedScore = -1e9;
constexpr float kDeadBias = static_cast<float>(kMaskedScore / 2);

/// What the device needs of a checked call, passed by value.
struct Params {
  const float *q, *k, *v, *mask;
  const int64_t *seed; // device memory; read only under dropout
  int64_t batch, sq, sk, d, dv;
  int leadRank;
  int64_t lead[kMaxRank];
  int64_t maskStrides[kMaxRank]; // over [lead..., Sq, Sk]
  float scale;
  bool causal, dropout;
  uint64_t dropoutOffset;
  double rate;
  float keepScale; // 1 / (1 - rate)

  __device__ bool hasBias() const { return mask || causal; }
  __device__ int64_t maskRowStride() const { return maskStrides[leadRank]; }
  __device__ int64_t maskColStride() const { return maskStrides[leadRank + 1]; }
  /// The mask's offset of scores [b..., 0, 0] (b the flattened lead index).
  __device__ int64_t maskBase(int64_t b) const {
    int64_t offset = 0;
    for (int dim = leadRank - 1; dim >= 0; --dim) {
      offset += (b % lead[dim]) * maskStrides[dim];
      b /= lead[dim];
    }
    return offset;
  }
  __device__ uint64_t dropoutKey() const {
    return loom::dropoutKey(static_cast<uint64_t>(*seed), dropoutOffset);
  }
  /// The dropout factor of probability [b, i, j], numbered as loom.dropout
  /// numbers the [..., Sq, Sk] tensor.
  __device__ float keepFactor(uint64_t key, int64_t b, int64_t i,
                              int64_t j) const {
    uint64_t index = static_cast<uint64_t>((b * sq + i) * sk + j);
    return loom::dropoutKeep(key, index, rate) ? keepScale : 0.0f;
  }
};

__device__ int lane() { return threadIdx.x % kWarpSize; }

/// The first warp work item of this thread and the stride between items.
__device__ int64_t firstItem() {
  return int64_t(blockIdx.x) * kWarps + threadIdx.x / kWarpSize;
}
__device__ int64_t itemStride() { return int64_t(gridDim.x) * kWarps; }

/// The largest of the warp's values, for every lane; NaN never wins (as
/// std::max's comparison on the CPU).
template <typename T> __device__ T warpMax(T x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    T other = __shfl_xor_sync(0xffffffffu, x, offset);
    x = x < other ? other : x;
  }
  return x;
}

/// The warp's sum, the same in every lane (a butterfly: both lanes of a
/// pair add the same two numbers).
__device__ float warpSum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

/// How many of [start, n) fall in the warp's block at `start`.
__device__ int blockLength(int64_t n, int64_t start) {
  return n - start < kWarpSize ? static_cast<int>(n - start) : kWarpSize;
}

__device__ float dot(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t t = 0; t < n; ++t)
    s += a[t] * b[t];
  return s;
}

/// Query row i's largest bias (mask + causal) over all keys, in double, for
/// every lane (AttentionKernels.cpp's rowShifts). 0 without a mask: causal
/// alone never masks key 0.
__device__ double rowShift(const Params &p, int64_t maskBase, int64_t i) {
  if (!p.mask)
    return 0.0;
  const float *m = p.mask + maskBase + i * p.maskRowStride();
  int64_t cs = p.maskColStride();
  double top = -INFINITY;
  for (int64_t j = lane(); j < p.sk; j += kWarpSize) {
    double x = m[j * cs];
    if (p.causal && j > i)
      x += kMaskedScore;
    top = top < x ? x : top;
  }
  top = warpMax(top);
  // A row of -inf (or NaN) keeps its values as they are.
  return isfinite(top) ? top : 0.0;
}

/// The bias of score [i, j] relative to the row's shift (fillBias).
__device__ float biasAt(const Params &p, int64_t maskBase, int64_t i, int64_t j,
                        double shift) {
  if (!p.mask)
    return p.causal && j > i ? static_cast<float>(kMaskedScore) : 0.0f;
  double x =
      double(p.mask[maskBase + i * p.maskRowStride() + j * p.maskColStride()]) -
      shift;
  if (p.causal && j > i)
    x += kMaskedScore;
  return static_cast<float>(x);
}

//===-- Forward -----------------------------------------------------------===//

/// Work item = (query row, block of kColBlock output columns).
__global__ void __launch_bounds__(kThreads)
    attentionForward(Params p, int64_t colBlocks, float *out, float *lse) {
  const int l = lane();
  const int64_t items = p.batch * p.sq * colBlocks;
  for (int64_t item = firstItem(); item < items; item += itemStride()) {
    const int64_t row = item / colBlocks, c0 = item % colBlocks * kColBlock;
    const int64_t b = row / p.sq, i = row % p.sq;
    const int64_t maskBase = p.mask ? p.maskBase(b) : 0;
    const double shift = rowShift(p, maskBase, i);
    const uint64_t key = p.dropout ? p.dropoutKey() : 0;
    const float *qi = p.q + row * p.d;
    const float *kb = p.k + b * p.sk * p.d, *vb = p.v + b * p.sk * p.dv;

    float rowMax = -INFINITY, rowSum = 0.0f;
    float acc[kColsPerLane];
    for (int c = 0; c < kColsPerLane; ++c)
      acc[c] = 0.0f;
    for (int64_t j0 = 0; j0 < p.sk; j0 += kWarpSize) {
      const int64_t j = j0 + l;
      const int cols = blockLength(p.sk, j0);
      bool live = j < p.sk;
      float s = -INFINITY;
      if (live) {
        float bias = p.hasBias() ? biasAt(p, maskBase, i, j, shift) : 0.0f;
        live = !p.hasBias() || bias > kDeadBias;
        if (live) {
          s = dot(qi, kb + j * p.d, p.d) * p.scale;
          if (p.hasBias())
            s += bias;
        }
      }
      // A block of dead scores adds nothing (the CPU skips it too).
      if (__ballot_sync(0xffffffffu, live) == 0)
        continue;
      float mx = warpMax(live ? s : -INFINITY);
      mx = rowMax < mx ? mx : rowMax;
      float base = mx == -INFINITY ? 0.0f : mx;
      float alpha = expf(rowMax - base);
      float e = live ? expf(s - base) : 0.0f;
      rowSum = rowSum * alpha + warpSum(e);
      rowMax = mx;
      // The sum is of the probabilities before dropout.
      if (p.dropout && live)
        e *= p.keepFactor(key, b, i, j);
      for (int c = 0; c < kColsPerLane; ++c)
        acc[c] *= alpha;
      for (int jj = 0; jj < cols; ++jj) {
        float pj = __shfl_sync(0xffffffffu, e, jj);
        const float *vj = vb + (j0 + jj) * p.dv;
        for (int c = 0; c < kColsPerLane; ++c) {
          int64_t t = c0 + l + c * kWarpSize;
          if (t < p.dv)
            acc[c] += pj * vj[t];
        }
      }
    }

    float inv = rowSum > 0.0f ? 1.0f / rowSum : 0.0f;
    for (int c = 0; c < kColsPerLane; ++c) {
      int64_t t = c0 + l + c * kWarpSize;
      if (t < p.dv)
        out[row * p.dv + t] = acc[c] * inv;
    }
    if (c0 == 0 && l == 0)
      lse[row] =
          static_cast<float>(shift + double(rowMax) + log(double(rowSum)));
  }
}

//===-- Backward ----------------------------------------------------------===//

struct Grads {
  const float *lse, *dout;
  float *dq, *dk, *dv;
  double *shift = nullptr; // per query row, written by the dQ kernel
  float *delta = nullptr;  // per query row, written by the dQ kernel
  float *lseRow = nullptr; // lse - shift per query row, by the dQ kernel
};

/// An lse this large in magnitude is recomputed from the row's scores, as
/// loom.attention_grad says (ir/LoomDialect.h's kCoarseLse): a float that
/// large (a row whose every key is masked, near -1e9) is too coarse to give
/// the probabilities back.
constexpr double kCoarseLse = double(1 << 20);

/// Query row i's lse relative to its shift, from its scores, in every lane
/// (AttentionBackward.cpp's recomputeCoarseLse).
__device__ float recomputedLse(const Params &p, int64_t maskBase, int64_t b,
                               int64_t i, double shift) {
  double top = -INFINITY, sum = 0.0;
  for (int64_t j = lane(); j < p.sk; j += kWarpSize) {
    float bias = p.hasBias() ? biasAt(p, maskBase, i, j, shift) : 0.0f;
    if (p.hasBias() && !(bias > kDeadBias))
      continue;
    double x = double(dot(p.q + (b * p.sq + i) * p.d,
                          p.k + (b * p.sk + j) * p.d, p.d)) *
                   p.scale +
               double(bias);
    if (x > top) {
      sum = sum * exp(top - x) + 1.0;
      top = x;
    } else {
      sum += exp(x - top);
    }
  }
  // Each lane's (top, sum) scaled to the warp's top, then summed.
  double warpTop = warpMax(top);
  double scaled = sum > 0.0 ? sum * exp(top - warpTop) : 0.0;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    scaled += __shfl_xor_sync(0xffffffffu, scaled, offset);
  return scaled > 0.0 ? static_cast<float>(warpTop + log(scaled)) : 0.0f;
}

/// P and dP (dropout applied) of score [b, i, j], or false when the score
/// is dead. `lseRow` is lse - shift in float, as the CPU forms it.
__device__ bool probability(const Params &p, int64_t maskBase, int64_t b,
                            int64_t i, int64_t j, double shift, float lseRow,
                            const float *dout, uint64_t key, float &prob,
                            float &dprob, float &z) {
  float bias = p.hasBias() ? biasAt(p, maskBase, i, j, shift) : 0.0f;
  if (p.hasBias() && !(bias > kDeadBias))
    return false;
  float x = dot(p.q + (b * p.sq + i) * p.d, p.k + (b * p.sk + j) * p.d, p.d) *
                p.scale -
            lseRow;
  if (p.hasBias())
    x += bias;
  prob = expf(x);
  dprob = dot(dout + (b * p.sq + i) * p.dv, p.v + (b * p.sk + j) * p.dv, p.dv);
  z = p.dropout ? p.keepFactor(key, b, i, j) : 1.0f;
  dprob *= z;
  return true;
}

/// Work item = (query row, block of kColBlock columns of dQ).
__global__ void __launch_bounds__(kThreads)
    attentionGradQueries(Params p, int64_t colBlocks, Grads g) {
  const int l = lane();
  const int64_t items = p.batch * p.sq * colBlocks;
  for (int64_t item = firstItem(); item < items; item += itemStride()) {
    const int64_t row = item / colBlocks, c0 = item % colBlocks * kColBlock;
    const int64_t b = row / p.sq, i = row % p.sq;
    const int64_t maskBase = p.mask ? p.maskBase(b) : 0;
    const double shift = rowShift(p, maskBase, i);
    const float lseRow =
        fabs(double(g.lse[row])) >= kCoarseLse
            ? recomputedLse(p, maskBase, b, i, shift)
            : static_cast<float>(double(g.lse[row]) - shift);
    const uint64_t key = p.dropout ? p.dropoutKey() : 0;

    // delta needs the whole row before any dS can be formed.
    float partial = 0.0f;
    for (int64_t j = l; j < p.sk; j += kWarpSize) {
      float prob, dprob, z;
      if (probability(p, maskBase, b, i, j, shift, lseRow, g.dout, key, prob,
                      dprob, z))
        partial += prob * dprob;
    }
    const float delta = warpSum(partial);
    if (c0 == 0 && l == 0) {
      g.shift[row] = shift;
      g.delta[row] = delta;
      g.lseRow[row] = lseRow;
    }

    float acc[kColsPerLane];
    for (int c = 0; c < kColsPerLane; ++c)
      acc[c] = 0.0f;
    const float *kb = p.k + b * p.sk * p.d;
    for (int64_t j0 = 0; j0 < p.sk; j0 += kWarpSize) {
      const int64_t j = j0 + l;
      const int cols = blockLength(p.sk, j0);
      float ds = 0.0f, prob, dprob, z;
      bool live = j < p.sk && probability(p, maskBase, b, i, j, shift, lseRow,
                                          g.dout, key, prob, dprob, z);
      if (live)
        ds = prob * (dprob - delta) * p.scale;
      if (__ballot_sync(0xffffffffu, live) == 0)
        continue;
      for (int jj = 0; jj < cols; ++jj) {
        float dsj = __shfl_sync(0xffffffffu, ds, jj);
        const float *kj = kb + (j0 + jj) * p.d;
        for (int c = 0; c < kColsPerLane; ++c) {
          int64_t t = c0 + l + c * kWarpSize;
          if (t < p.d)
            acc[c] += dsj * kj[t];
        }
      }
    }
    for (int c = 0; c < kColsPerLane; ++c) {
      int64_t t = c0 + l + c * kWarpSize;
      if (t < p.d)
        g.dq[row * p.d + t] = acc[c];
    }
  }
}

/// Work item = (key row, block of kColBlock columns of dK and of dV).
__global__ void __launch_bounds__(kThreads)
    attentionGradKeys(Params p, int64_t colBlocks, Grads g) {
  const int l = lane();
  const int64_t items = p.batch * p.sk * colBlocks;
  for (int64_t item = firstItem(); item < items; item += itemStride()) {
    const int64_t keyRow = item / colBlocks, c0 = item % colBlocks * kColBlock;
    const int64_t b = keyRow / p.sk, j = keyRow % p.sk;
    const int64_t maskBase = p.mask ? p.maskBase(b) : 0;
    const uint64_t key = p.dropout ? p.dropoutKey() : 0;
    const float *qb = p.q + b * p.sq * p.d, *dob = g.dout + b * p.sq * p.dv;

    float accK[kColsPerLane], accV[kColsPerLane];
    for (int c = 0; c < kColsPerLane; ++c)
      accK[c] = accV[c] = 0.0f;
    for (int64_t i0 = 0; i0 < p.sq; i0 += kWarpSize) {
      const int64_t i = i0 + l;
      const int rows = blockLength(p.sq, i0);
      float ds = 0.0f, pz = 0.0f;
      bool live = false;
      if (i < p.sq) {
        const int64_t row = b * p.sq + i;
        const double shift = g.shift[row];
        const float lseRow = g.lseRow[row];
        float prob, dprob, z;
        live = probability(p, maskBase, b, i, j, shift, lseRow, g.dout, key,
                           prob, dprob, z);
        if (live) {
          ds = prob * (dprob - g.delta[row]) * p.scale;
          pz = prob * z;
        }
      }
      // Queries that do not see this key add nothing (the CPU skips them).
      if (__ballot_sync(0xffffffffu, live) == 0)
        continue;
      for (int ii = 0; ii < rows; ++ii) {
        float dsi = __shfl_sync(0xffffffffu, ds, ii);
        float pzi = __shfl_sync(0xffffffffu, pz, ii);
        const float *qi = qb + (i0 + ii) * p.d, *doi = dob + (i0 + ii) * p.dv;
        for (int c = 0; c < kColsPerLane; ++c) {
          int64_t t = c0 + l + c * kWarpSize;
          if (t < p.d)
            accK[c] += dsi * qi[t];
          if (t < p.dv)
            accV[c] += pzi * doi[t];
        }
      }
    }
    for (int c = 0; c < kColsPerLane; ++c) {
      int64_t t = c0 + l + c * kWarpSize;
      if (t < p.d)
        g.dk[keyRow * p.d + t] = accK[c];
      if (t < p.dv)
        g.dv[keyRow * p.dv + t] = accV[c];
    }
  }
}

//===-- Host side ---------------------------------------------------------===//

unsigned blocksFor(int64_t items) {
  return static_cast<unsigned>(
      std::min((items + kWarps - 1) / kWarps, kMaxBlocks));
}

int64_t colBlocksFor(int64_t cols) {
  // At least one: the forward's lse is written by column block 0 even when
  // Dv is 0.
  return std::max<int64_t>(1, (cols + kColBlock - 1) / kColBlock);
}

/// The checks both devices make, then the Params of the launches.
ErrorOr<AttentionShape> prepare(const CudaKernelCall &call, bool backward,
                                Params &p) {
  const char *kernel = backward ? "attention_grad" : "attention";
  ErrorOr<AttentionShape> shape =
      loom::kernels::checkAttentionCall(call.args, call.attrs, backward);
  if (!shape)
    return shape.status();
  const AttentionShape &s = *shape;
  int rank = static_cast<int>(s.lead.size()) + 2;
  // The CPU reads such keys through their position stride; this kernel
  // does not yet (the compiler keeps the transpose for CUDA).
  if (s.attrs.keysPositionMajor)
    return Status::failure(std::string(kernel) +
                               ": the CUDA kernel takes keys [..., Sk, D], "
                               "not position first",
                           ErrorCode::Unsupported);
  if (s.k->dtype != loom::DType::F32)
    return Status::failure(std::string(kernel) +
                               ": the CUDA kernel reads f32 keys and values, "
                               "not " +
                               loom::dtypeName(s.k->dtype),
                           ErrorCode::Unsupported);
  if (s.mask && rank > kMaxRank)
    return Status::failure(std::string(kernel) +
                               ": the CUDA kernel takes a mask over scores "
                               "of rank up to " +
                               std::to_string(kMaxRank) + ", got rank " +
                               std::to_string(rank),
                           ErrorCode::Unsupported);
  p = Params();
  p.q = s.q->f32();
  p.k = s.k->f32();
  p.v = s.v->f32();
  p.mask = s.mask ? s.mask->f32() : nullptr;
  p.seed = s.seed ? static_cast<const int64_t *>(s.seed->data) : nullptr;
  p.batch = s.batch;
  p.sq = s.sq;
  p.sk = s.sk;
  p.d = s.d;
  p.dv = s.dv;
  p.leadRank = rank - 2;
  if (s.mask)
    for (int dim = 0; dim < rank; ++dim) {
      if (dim < rank - 2)
        p.lead[dim] = s.lead[dim];
      p.maskStrides[dim] = s.maskStrides[dim];
    }
  p.scale = static_cast<float>(s.attrs.scale);
  p.causal = s.attrs.causal;
  // The rate is in [0, 1) and a seed is there (the checks saw to both).
  p.rate = s.attrs.dropoutRate;
  p.dropout = p.rate > 0.0;
  p.dropoutOffset = s.attrs.dropoutOffset;
  p.keepScale = p.dropout ? static_cast<float>(1.0 / (1.0 - p.rate)) : 1.0f;
  return shape;
}

} // namespace

Status loom::cuda::attentionKernel(const CudaKernelCall &call) {
  Params p;
  ErrorOr<AttentionShape> shape = prepare(call, /*backward=*/false, p);
  if (!shape)
    return shape.status();
  int64_t colBlocks = colBlocksFor(p.dv);
  int64_t items = p.batch * p.sq * colBlocks;
  if (items == 0)
    return Status::success();
  auto stream = static_cast<cudaStream_t>(call.stream);
  attentionForward<<<blocksFor(items), kThreads, 0, stream>>>(
      p, colBlocks, shape->rest[0]->f32(), shape->rest[1]->f32());
  return launched("attention");
}

Status loom::cuda::attentionGradKernel(const CudaKernelCall &call) {
  Params p;
  ErrorOr<AttentionShape> shape = prepare(call, /*backward=*/true, p);
  if (!shape)
    return shape.status();
  const std::vector<const runtime::TensorRef *> &rest = shape->rest;
  Grads g;
  g.lse = rest[1]->f32();
  g.dout = rest[2]->f32();
  g.dq = rest[3]->f32();
  g.dk = rest[4]->f32();
  g.dv = rest[5]->f32();
  auto stream = static_cast<cudaStream_t>(call.stream);
  const int64_t rows = p.batch * p.sq, keys = p.batch * p.sk;

  // Each query row's shift (double), delta and lse - shift (float), from the dQ kernel
  // to the dK/dV kernel, in stream-ordered scratch freed behind them.
  StreamScratch scratch(stream);
  if (rows > 0) {
    LOOM_RETURN_IF_ERROR(scratch.allocate(
        size_t(rows) * (sizeof(double) + 2 * sizeof(float)), "attention_grad"));
    g.shift = scratch.as<double>();
    g.delta = reinterpret_cast<float *>(g.shift + rows);
    g.lseRow = g.delta + rows;

    int64_t colBlocks = colBlocksFor(p.d);
    int64_t items = rows * colBlocks;
    attentionGradQueries<<<blocksFor(items), kThreads, 0, stream>>>(
        p, colBlocks, g);
    LOOM_RETURN_IF_ERROR(launched("attention_grad"));
  }
  // With no queries every key's dK and dV row is written as zeros.
  if (keys == 0)
    return Status::success();
  int64_t colBlocks = colBlocksFor(std::max(p.d, p.dv));
  int64_t items = keys * colBlocks;
  attentionGradKeys<<<blocksFor(items), kThreads, 0, stream>>>(p, colBlocks, g);
  return launched("attention_grad");
}
