//===- LossKernels.cu - Cross entropy and its gradient on the GPU ---------===//
//
// The CUDA versions of runtime/cpu/LossKernels.cpp, which states the
// formulas: with label smoothing eps over C classes,
//
//   loss = lse - (1 - eps) x[t] - eps/C sum_c x[c]      lse = log sum e^x
//   grad = (e^(x - lse) - q) g     q = eps/C + (1 - eps) [c == t]
//
// One block per row of logits (a whole vocabulary), rows striding over the
// grid. A row is walked three times: its max, then e^(x - max) and x summed
// in one pass, then (the gradient) the writes. Each thread adds its float
// terms into double, and the block folds the threads' partials in a fixed
// order (warp butterflies, then the warps in turn), so a row's sums are the
// same from run to run: no atomics on floats. The scalars are combined in
// double as on the CPU, the target's gradient element too (its probability
// and its q cancel once the model has learnt).
//
// The gradient may overwrite the logits (the memory plan does that for the
// largest buffer of a training step): the target's logit is read before
// the block's first barrier, every element is read for the statistics
// before any is written, and then each thread writes only the elements it
// reads, recomputing e^(x - max) rather than storing it, so a row is read
// three times and written once.
//
// A target id outside [0, C) (and not the ignored one) is refused before
// anything is written, as on the CPU, with the CPU's words. The ids are in
// device memory: a first kernel records the lowest bad row in a word of
// stream-ordered scratch, and the host waits for that word (and then for
// the bad id itself). That is one synchronization per call: the price of
// refusing rather than writing garbage.
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelChecks.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

using loom::DType;
using loom::ErrorCode;
using loom::ErrorOr;
using loom::Status;
using loom::cuda::CudaKernelCall;
using loom::cuda::launched;
using loom::cuda::StreamScratch;
using loom::runtime::TensorRef;

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
/// Blocks of one launch; rows past it loop over the grid.
constexpr int64_t kMaxBlocks = 65535;
/// What the bad-target word holds when every target is fine.
constexpr unsigned long long kNoBadRow = ~0ull;

/// The largest of every thread's `v`, for every thread. NaN never wins a
/// comparison, so NaNs are skipped; they reach the sums that follow anyway.
__device__ float blockMax(float v) {
  __shared__ float partial[kWarps];
  for (int offset = 16; offset > 0; offset /= 2) {
    float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kWarps; ++w)
    v = partial[w] > v ? partial[w] : v;
  __syncthreads(); // before the slots are reused
  return v;
}

/// The sum of every thread's `v`, for every thread, in a fixed order: a
/// butterfly within each warp (both lanes of a pair add the same two
/// numbers), then the warps' sums in turn.
__device__ double blockSum(double v) {
  __shared__ double partial[kWarps];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0)
    partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kWarps; ++w)
    v += partial[w];
  __syncthreads(); // before the slots are reused
  return v;
}

/// The row's max (-inf for a row of NaNs; its sums are NaN then).
__device__ float rowMax(const float *x, int64_t c) {
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
    m = x[i] > m ? x[i] : m;
  return blockMax(m);
}

/// Records the lowest row whose target is neither `ignoreIndex` nor in
/// [0, classes) in `*first` (kNoBadRow when there is none).
template <typename Id>
__global__ void findBadTarget(const Id *targets, int64_t rows, int64_t classes,
                              int64_t ignoreIndex, unsigned long long *first) {
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = targets[r];
    if (t != ignoreIndex && (t < 0 || t >= classes))
      atomicMin(first, static_cast<unsigned long long>(r));
  }
}

template <typename Id>
__global__ void __launch_bounds__(kThreads)
    crossEntropyRows(const float *logits, const Id *targets, int64_t rows,
                     int64_t c, int64_t ignoreIndex, double eps, float *loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t t = targets[r]; // the same for the whole block
    if (t == ignoreIndex) {
      if (threadIdx.x == 0)
        loss[r] = 0.0f;
      continue;
    }
    const float *x = logits + r * c;
    float mx = rowMax(x, c);
    double expSum = 0, sum = 0;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x) {
      float v = x[i];
      expSum += expf(v - mx);
      sum += v;
    }
    expSum = blockSum(expSum);
    sum = blockSum(sum);
    if (threadIdx.x == 0) {
      double lse = mx + log(expSum);
      loss[r] =
          static_cast<float>(lse - (1.0 - eps) * x[t] - eps / double(c) * sum);
    }
  }
}

/// y = (softmax(x) - q) g per row; y may be x.
template <typename Id>
__global__ void __launch_bounds__(kThreads)
    crossEntropyGradRows(const float *logits, const Id *targets,
                         const float *grad, int64_t rows, int64_t c,
                         int64_t ignoreIndex, double eps, float *out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t t = targets[r]; // the same for the whole block
    const float *x = logits + r * c;
    float *y = out + r * c;
    if (t == ignoreIndex) {
      for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        y[i] = 0.0f;
      continue;
    }
    // Before rowMax's barrier: no thread has written the row yet.
    float xt = x[t];
    float mx = rowMax(x, c);
    double expSum = 0;
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      expSum += expf(x[i] - mx);
    expSum = blockSum(expSum); // every read of the row is behind this barrier
    double g = grad[r];
    float scale = static_cast<float>(g / expSum);
    float sub = static_cast<float>(eps / double(c) * g);
    double q = eps / double(c) + (1.0 - eps);
    float yt = static_cast<float>((exp(double(xt) - mx) / expSum - q) * g);
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
      y[i] = i == t ? yt : expf(x[i] - mx) * scale - sub;
  }
}

unsigned blocksFor(int64_t rows) {
  return static_cast<unsigned>(std::min(rows, kMaxBlocks));
}

struct LossShape {
  int64_t rows = 0, classes = 0, ignoreIndex = 0;
  double eps = 0;
};

/// Refuses the first target outside [0, classes) that is not ignored, as
/// the CPU kernel does, before anything is written. Waits for the stream.
Status checkTargets(const TensorRef &targets, const LossShape &s,
                    const char *kernel, cudaStream_t stream) {
  if (s.rows == 0)
    return Status::success();
  StreamScratch first(stream);
  LOOM_RETURN_IF_ERROR(first.allocate(sizeof(unsigned long long), kernel));
  LOOM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first.as<unsigned long long>(),
                                            0xff, sizeof(unsigned long long),
                                            stream),
                            kernel);
  unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((s.rows + kThreads - 1) / kThreads, 1024));
  if (targets.dtype == DType::I32)
    findBadTarget<<<blocks, kThreads, 0, stream>>>(
        static_cast<const int32_t *>(targets.data), s.rows, s.classes,
        s.ignoreIndex, first.as<unsigned long long>());
  else
    findBadTarget<<<blocks, kThreads, 0, stream>>>(
        static_cast<const int64_t *>(targets.data), s.rows, s.classes,
        s.ignoreIndex, first.as<unsigned long long>());
  LOOM_RETURN_IF_ERROR(launched(kernel));
  unsigned long long bad = kNoBadRow;
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&bad, first.as<unsigned long long>(), sizeof(bad),
                      cudaMemcpyDeviceToHost, stream),
      kernel);
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), kernel);
  if (bad == kNoBadRow)
    return Status::success();
  // The bad id itself, for the message.
  bool narrow = targets.dtype == DType::I32;
  int32_t id32 = 0;
  int64_t id64 = 0;
  size_t width = narrow ? sizeof(id32) : sizeof(id64);
  const char *at = static_cast<const char *>(targets.data) + bad * width;
  LOOM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(narrow ? static_cast<void *>(&id32) : &id64, at, width,
                      cudaMemcpyDeviceToHost, stream),
      kernel);
  LOOM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), kernel);
  int64_t id = narrow ? id32 : id64;
  return loom::kernels::targetOutsideClasses(kernel, id, s.classes);
}

/// The checks of runtime/cpu/LossKernels.cpp's checkLoss, in its order.
Status checkLoss(const CudaKernelCall &call, const char *kernel,
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
  return checkTargets(targets, s, kernel,
                      static_cast<cudaStream_t>(call.stream));
}

} // namespace

Status loom::cuda::crossEntropyKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkArgCount(call.args, 3, "cross_entropy"));
  LossShape s;
  const TensorRef &logits = call.args[0], &targets = call.args[1],
                  &out = call.args[2];
  LOOM_RETURN_IF_ERROR(
      checkLoss(call, "cross_entropy", nullptr, out, targets.shape, s));
  if (s.rows == 0)
    return Status::success();
  auto stream = static_cast<cudaStream_t>(call.stream);
  // With no classes every target is ignored (checkTargets saw to that).
  if (targets.dtype == DType::I32)
    crossEntropyRows<<<blocksFor(s.rows), kThreads, 0, stream>>>(
        logits.f32(), targets.i32(), s.rows, s.classes, s.ignoreIndex, s.eps,
        out.f32());
  else
    crossEntropyRows<<<blocksFor(s.rows), kThreads, 0, stream>>>(
        logits.f32(), targets.i64(), s.rows, s.classes, s.ignoreIndex, s.eps,
        out.f32());
  return launched("cross_entropy");
}

Status loom::cuda::crossEntropyGradKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(
      kernels::checkArgCount(call.args, 4, "cross_entropy_grad"));
  LossShape s;
  const TensorRef &logits = call.args[0], &targets = call.args[1],
                  &grad = call.args[2], &out = call.args[3];
  LOOM_RETURN_IF_ERROR(
      checkLoss(call, "cross_entropy_grad", &grad, out, logits.shape, s));
  if (s.rows == 0 || s.classes == 0)
    return Status::success();
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (targets.dtype == DType::I32)
    crossEntropyGradRows<<<blocksFor(s.rows), kThreads, 0, stream>>>(
        logits.f32(), targets.i32(), grad.f32(), s.rows, s.classes,
        s.ignoreIndex, s.eps, out.f32());
  else
    crossEntropyGradRows<<<blocksFor(s.rows), kThreads, 0, stream>>>(
        logits.f32(), targets.i64(), grad.f32(), s.rows, s.classes,
        s.ignoreIndex, s.eps, out.f32());
  return launched("cross_entropy_grad");
}
