//===- LinearKernels.cpp - loom.linear and loom.matmul through cuBLASLt ---===//
//
// The CUDA versions of runtime/cpu/LinearKernels.cpp: one cuBLASLt GEMM per
// call wherever the layout allows it, queued on the call's stream.
//
// Tensors are row-major and cuBLAS is column-major, so every GEMM is asked
// for transposed: the row-major C [M, N] = A B is the column-major C^T
// [N, M] = B^T A^T, and a row-major matrix read as column-major is its own
// transpose. The operands therefore swap places (the rhs is cuBLAS's A, the
// lhs its B), their transposes stay as the call says, and every matrix is
// packed (its leading dimension is its column-major row count).
//
// The arithmetic is plain fp32: CUBLAS_COMPUTE_32F, never TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32 would round the operands to 10 bits of
// mantissa, and the conformance suite holds GEMMs to fp32 tolerance against
// the interpreter's double arithmetic).
//
// linear folds every leading dim of x into M and is one GEMM, x W^T with W
// [N, K] as stored. Its epilogue act(y + bias) + residual rides on the GEMM
// where cuBLASLt computes the same thing: the bias (CUBLASLT_EPILOGUE_BIAS,
// a vector along the column-major rows, which are N), a ReLU after it where
// no residual follows (RELU_BIAS), and a residual with no activation as
// the GEMM's C with beta = 1 (C may be the result itself: cuBLASLt allows
// C == D with one layout). cuBLASLt adds C before its epilogue, so a
// residual after an activation cannot be C; and its GELU epilogues are the
// tanh approximation, while loom.gelu is the exact erf form. Those go to
// one elementwise pass after the GEMM (LinearEpilogue.cu), which reads the
// GEMM's output from scratch memory when the residual lies in the result
// (the GEMM would overwrite it first).
//
// matmul broadcasts batch dims as the CPU does (runtime/KernelChecks.cpp,
// checkMatmul). A batched lhs times one rhs matrix folds lhs's batch into M
// (one GEMM, as on the CPU); otherwise the batch dims, those of size 1
// dropped and neighbours whose strides chain merged, become one strided
// batch (the innermost group, an operand's stride 0 where it broadcasts)
// and a host loop over the rest, which is empty for attention's [B, H]
// products.
//
// Per GPU there is one cuBLASLt handle, one 32 MiB workspace, and a cache of
// plans (the matmul descriptor, the layouts and the algorithm
// cublasLtMatmulAlgoGetHeuristic chose) keyed by everything the heuristic
// sees: shapes, transposes, batch strides, the epilogue and the alignment
// of each pointer (cuBLASLt's preferences default to 256-byte alignment,
// and tensors the memory plan places inside a buffer are less aligned), so
// that decoding, which repeats a handful of shapes, pays for the heuristic
// once per shape. One mutex per GPU guards the cache, the workspace and
// the bias pointer that each call sets on its plan's descriptor; cuBLASLt
// reads the descriptor while it queues the GEMM, so the lock is held only
// that long. The workspace is shared by every stream on the GPU: a GEMM on
// a stream other than the last one's first waits (on the GPU) for the
// last GEMM to finish with it. The handles and workspaces live as long as
// the process (tearing them down at exit would race CUDA's own teardown).
//
//===----------------------------------------------------------------------===//

#include "runtime/KernelChecks.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using loom::ErrorCode;
using loom::ErrorOr;
using loom::Status;
using loom::abi::Activation;
using loom::cuda::CublasLt;
using loom::cuda::cublasLt;
using loom::cuda::cudaFailure;
using loom::cuda::CudaKernelCall;
using loom::cuda::StreamScratch;
using loom::runtime::TensorRef;

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// Plans a GPU keeps; past this the cache starts over (a model has a few
/// dozen GEMM shapes, decoding without a KV cache one more per step).
constexpr size_t kMaxPlans = 1024;
/// cuBLASLt counts a strided batch in int32.
constexpr int64_t kMaxBatch = INT32_MAX;

/// cuBLASLt's entry points. runGemm has loaded them (cublasLt()) before
/// any call through here.
const CublasLt &lt() { return **cublasLt(); }

Status cublasFailure(cublasStatus_t status, const std::string &what) {
  ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory
                                                        : ErrorCode::Internal;
  return Status::failure(what + ": " + lt().cublasLtGetStatusString(status),
                         code);
}

#define LOOM_CUBLAS_RETURN_IF_ERROR(call, what)                                \
  do {                                                                         \
    cublasStatus_t loomCublasStatus = (call);                                  \
    if (loomCublasStatus != CUBLAS_STATUS_SUCCESS)                             \
      return cublasFailure(loomCublasStatus, what);                            \
  } while (0)

/// The largest power of two that divides the address, at most 256 (the
/// largest alignment cuBLASLt's preferences ask for).
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  if (address == 0)
    return 256;
  uintptr_t lowest = address & (~address + 1);
  return static_cast<uint32_t>(std::min<uintptr_t>(lowest, 256));
}

/// Whether the byte ranges of two tensors intersect.
bool overlaps(const void *a, int64_t aBytes, const void *b, int64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + uintptr_t(bBytes) && y < x + uintptr_t(aBytes);
}

/// One GEMM in cuBLAS's column-major terms: D [dRows, dCols] = op(A) op(B),
/// plus C (laid out as D) when `c` is set, each matrix packed; `batch`
/// matrices apart by the strides, in elements.
struct Gemm {
  bool transA = false, transB = false;
  int64_t aRows = 0, aCols = 0, bRows = 0, bCols = 0, dRows = 0, dCols = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideD = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  float *d = nullptr;
};

using PlanKey = std::array<int64_t, 18>;

PlanKey keyOf(const Gemm &g) {
  const float *c = g.c ? g.c : g.d;
  return {g.transA,       g.transB,         g.aRows,
          g.aCols,        g.bRows,          g.bCols,
          g.dRows,        g.dCols,          g.batch,
          g.strideA,      g.strideB,        g.strideD,
          g.epilogue,     alignmentOf(g.a), alignmentOf(g.b),
          alignmentOf(c), alignmentOf(g.d), alignmentOf(g.bias)};
}

/// A GEMM shape's descriptors and the algorithm chosen for it.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  Status refusal; // why cuBLASLt has no algorithm; the plan is then empty
  Plan() = default;
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;
  ~Plan() {
    if (desc)
      lt().cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t layout : {a, b, d})
      if (layout)
        lt().cublasLtMatrixLayoutDestroy(layout);
  }
};

/// What one GPU's GEMMs share; guarded by `mutex`.
struct GemmDevice {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  cudaEvent_t lastUse = nullptr; // after the last GEMM that used workspace
  cudaStream_t lastStream = nullptr;
  bool used = false;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;

  /// The handle, workspace and event, made by the first GEMM (again by the
  /// next if that failed).
  Status ready() {
    if (!handle)
      LOOM_CUBLAS_RETURN_IF_ERROR(lt().cublasLtCreate(&handle),
                                  "cublasLtCreate");
    if (!workspace) {
      cudaError_t error = cudaMalloc(&workspace, kWorkspaceBytes);
      if (error != cudaSuccess) {
        workspace = nullptr;
        cudaGetLastError();
        return cudaFailure(error, "cuBLASLt workspace");
      }
    }
    if (!lastUse)
      LOOM_CUDA_RETURN_IF_ERROR(
          cudaEventCreateWithFlags(&lastUse, cudaEventDisableTiming),
          "cudaEventCreate");
    return Status::success();
  }
};

/// The current GPU's GemmDevice (CudaDevice::callLibrary made it current).
ErrorOr<GemmDevice *> currentGemmDevice() {
  int ordinal = 0;
  LOOM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&ordinal), "cudaGetDevice");
  static std::mutex mutex;
  // Never freed: see the file comment.
  static auto *devices = new std::map<int, std::unique_ptr<GemmDevice>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<GemmDevice> &device = (*devices)[ordinal];
  if (!device)
    device = std::make_unique<GemmDevice>();
  return device.get();
}

Status makeLayout(cublasLtMatrixLayout_t &layout, int64_t rows, int64_t cols,
                  int64_t batch, int64_t stride) {
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, uint64_t(rows),
                                      uint64_t(cols), rows),
      "cublasLtMatrixLayoutCreate");
  if (batch == 1)
    return Status::success();
  int32_t count = static_cast<int32_t>(batch);
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
      "cuBLASLt batch count");
  LOOM_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatrixLayoutSetAttribute(
                                  layout,
                                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                  &stride, sizeof(stride)),
                              "cuBLASLt batch stride");
  return Status::success();
}

/// Descriptors for `g` and the algorithm cuBLASLt's heuristic ranks first
/// for them, given the alignment of g's pointers.
Status makePlan(GemmDevice &device, const Gemm &g, Plan &plan,
                const char *kernel) {
  std::string what = std::string(kernel) + ": cuBLASLt";
  // fp32 in, fp32 arithmetic, fp32 out: no TF32 (see the file comment).
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      what);
  int32_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epilogue = g.epilogue;
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
      what);
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatmulDescSetAttribute(
          plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
      what);
  LOOM_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmulDescSetAttribute(
                                  plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                  &epilogue, sizeof(epilogue)),
                              what);
  if (g.bias) {
    // The heuristic reads the pointer's alignment.
    const void *bias = g.bias;
    LOOM_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatmulDescSetAttribute(
            plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
        what);
  }
  LOOM_RETURN_IF_ERROR(
      makeLayout(plan.a, g.aRows, g.aCols, g.batch, g.strideA));
  LOOM_RETURN_IF_ERROR(
      makeLayout(plan.b, g.bRows, g.bCols, g.batch, g.strideB));
  LOOM_RETURN_IF_ERROR(
      makeLayout(plan.d, g.dRows, g.dCols, g.batch, g.strideD));

  cublasLtMatmulPreference_t preference = nullptr;
  LOOM_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmulPreferenceCreate(&preference),
                              what);
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                  cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      owned(preference, lt().cublasLtMatmulPreferenceDestroy);
  uint64_t workspaceBytes = kWorkspaceBytes;
  LOOM_CUBLAS_RETURN_IF_ERROR(lt().cublasLtMatmulPreferenceSetAttribute(
                                  preference,
                                  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                  &workspaceBytes, sizeof(workspaceBytes)),
                              what);
  const float *c = g.c ? g.c : g.d;
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void *>
      alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.a},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.b},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.d}};
  for (const auto &[attribute, pointer] : alignments) {
    uint32_t bytes = alignmentOf(pointer);
    LOOM_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatmulPreferenceSetAttribute(preference, attribute, &bytes,
                                                  sizeof(bytes)),
        what);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = lt().cublasLtMatmulAlgoGetHeuristic(
      device.handle, plan.desc, plan.a, plan.b, plan.d, plan.d, preference, 1,
      &result, &found);
  // NOT_SUPPORTED: no heuristic for this configuration, as good as none
  // found (the caller may fall back to a plainer GEMM).
  if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
    return cublasFailure(status, what + " heuristic");
  if (status != CUBLAS_STATUS_SUCCESS)
    found = 0;
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return Status::failure(
        what + " has no algorithm for a [" + std::to_string(g.dCols) + ", " +
            std::to_string(g.dRows) +
            "] result over K=" + std::to_string(g.transA ? g.aRows : g.aCols) +
            " (batch " + std::to_string(g.batch) + ")",
        ErrorCode::Unsupported);
  plan.algo = result.algo;
  return Status::success();
}

/// Queues `g` on `stream`.
Status runGemm(const Gemm &g, cudaStream_t stream, const char *kernel) {
  // Before any cuBLASLt call (lt() below): the library opens on first use.
  if (ErrorOr<const CublasLt *> library = cublasLt(); !library)
    return library.status().withContext(kernel);
  ErrorOr<GemmDevice *> found = currentGemmDevice();
  if (!found)
    return found.status();
  GemmDevice &device = **found;
  std::lock_guard<std::mutex> lock(device.mutex);
  LOOM_RETURN_IF_ERROR(device.ready().withContext(kernel));

  PlanKey key = keyOf(g);
  auto it = device.plans.find(key);
  if (it == device.plans.end()) {
    auto plan = std::make_unique<Plan>();
    Status made = makePlan(device, g, *plan, kernel);
    if (made.code() == ErrorCode::Unsupported) {
      // Remembered, so that the caller's fallback costs no heuristic later.
      plan = std::make_unique<Plan>();
      plan->refusal = made;
    } else if (!made.ok()) {
      return made;
    }
    if (device.plans.size() >= kMaxPlans)
      device.plans.clear(); // host objects only: no GEMM in flight uses them
    it = device.plans.emplace(key, std::move(plan)).first;
  }
  Plan &plan = *it->second;
  if (!plan.refusal.ok())
    return plan.refusal;
  std::string what = std::string(kernel) + ": cuBLASLt";
  if (g.bias) {
    const void *bias = g.bias;
    LOOM_CUBLAS_RETURN_IF_ERROR(
        lt().cublasLtMatmulDescSetAttribute(
            plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
        what);
  }
  // The workspace is the GPU's: wait for its last user on another stream.
  if (device.used && device.lastStream != stream)
    LOOM_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, device.lastUse, 0),
                              kernel);
  float alpha = 1.0f, beta = g.c ? 1.0f : 0.0f;
  // With beta = 0 cuBLASLt does not read C; D stands in for it.
  const float *c = g.c ? g.c : g.d;
  LOOM_CUBLAS_RETURN_IF_ERROR(
      lt().cublasLtMatmul(device.handle, plan.desc, &alpha, g.a, plan.a, g.b,
                          plan.b, &beta, c, plan.d, g.d, plan.d, &plan.algo,
                          device.workspace, kWorkspaceBytes, stream),
      what);
  LOOM_CUDA_RETURN_IF_ERROR(cudaEventRecord(device.lastUse, stream), kernel);
  device.lastStream = stream;
  device.used = true;
  return Status::success();
}

/// A group of matmul's batch dims: `size` matrices, and how far apart they
/// lie in lhs, rhs and the result, in elements.
struct BatchDim {
  int64_t size, strideLhs, strideRhs, strideOut;
};

/// Mixed-precision products (bf16 factors) are not built for CUDA yet.
Status bf16FactorsUnsupported(const char *kernel) {
  return Status::failure(std::string(kernel) +
                             ": bf16 factors are not supported on CUDA yet",
                         loom::ErrorCode::Unsupported);
}

} // namespace

Status loom::cuda::linearKernel(const CudaKernelCall &call) {
  ErrorOr<abi::LinearCall> attrs = abi::LinearCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("linear");
  bool hasBias = attrs->hasBias, hasResidual = attrs->hasResidual;
  Activation activation = attrs->activation;
  kernels::LinearDims dims;
  LOOM_RETURN_IF_ERROR(
      kernels::checkLinear(call.args, hasBias, hasResidual, dims));
  if (dims.factors != DType::F32)
    return bf16FactorsUnsupported("linear");
  const TensorRef &x = call.args[0], &w = call.args[1], &out = call.args.back();
  const float *bias = hasBias ? call.args[2].f32() : nullptr;
  const float *residual = hasResidual ? call.args[2 + hasBias].f32() : nullptr;
  int64_t m = dims.m, n = dims.n, k = dims.k;
  if (m == 0 || n == 0)
    return Status::success();
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (k == 0) // the product is zeros; only the epilogue is left
    return linearEpilogueOnDevice(nullptr, bias, residual, out.f32(), m, n,
                                  activation, stream);

  // What cuBLASLt can do (see the file comment), and what is left for one
  // elementwise pass.
  bool residualInOut =
      residual && overlaps(residual, out.bytes(), out.data, out.bytes());
  bool residualAsC = residual && activation == Activation::None &&
                     (!residualInOut || residual == out.f32());
  bool reluInGemm = activation == Activation::Relu && !residual;
  Activation passActivation = reluInGemm ? Activation::None : activation;
  const float *passResidual = residualAsC ? nullptr : residual;
  bool pass = passActivation != Activation::None || passResidual;

  Gemm g;
  // Column-major D [N, M] = W^T x^T: W [N, K] row-major is [K, N]
  // column-major, transposed; x [M, K] row-major is [K, M] as it stands.
  g.transA = true;
  g.aRows = k;
  g.aCols = n;
  g.a = w.f32();
  g.bRows = k;
  g.bCols = m;
  g.b = x.f32();
  g.dRows = n;
  g.dCols = m;
  g.bias = bias;
  g.c = residualAsC ? residual : nullptr;
  if (reluInGemm)
    g.epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else
    g.epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;

  StreamScratch scratch(stream);
  g.d = out.f32();
  if (pass && passResidual && residualInOut) {
    // The GEMM would overwrite the residual before the pass reads it.
    LOOM_RETURN_IF_ERROR(scratch.allocate(out.bytes(), "linear"));
    g.d = scratch.as<float>();
  }
  const float *passBias = nullptr;
  Status gemm = runGemm(g, stream, "linear");
  if (gemm.code() == ErrorCode::Unsupported &&
      g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // This cuBLASLt has no fp32 algorithm with the epilogue for this shape
    // and these alignments (not expected of CUDA 12 or 13, but cheap to
    // survive): a plain GEMM, and the bias and ReLU in the pass, which
    // then reads the GEMM's output where the GEMM wrote it (the residual,
    // if any, is either C or already kept out of the result's way).
    g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    g.bias = nullptr;
    passBias = bias;
    passActivation = activation;
    pass = true;
    gemm = runGemm(g, stream, "linear");
  }
  LOOM_RETURN_IF_ERROR(gemm);
  if (!pass)
    return Status::success();
  return linearEpilogueOnDevice(g.d, passBias, passResidual, out.f32(), m, n,
                                passActivation, stream);
}

Status loom::cuda::matmulKernel(const CudaKernelCall &call) {
  LOOM_RETURN_IF_ERROR(kernels::checkArgCount(call.args, 3, "matmul"));
  ErrorOr<abi::MatmulCall> attrs = abi::MatmulCall::decode(call.attrs);
  if (!attrs)
    return attrs.status().withContext("matmul");
  bool ta = attrs->transposeLhs, tb = attrs->transposeRhs;
  kernels::MatmulDims dims;
  LOOM_RETURN_IF_ERROR(kernels::checkMatmul(call.args, ta, tb, dims));
  if (dims.factors != DType::F32)
    return bf16FactorsUnsupported("matmul");
  const TensorRef &a = call.args[0], &b = call.args[1], &out = call.args[2];
  int64_t m = dims.m, n = dims.n, k = dims.k;
  size_t rank = dims.batch.size();
  int64_t batches = kernels::product(dims.batch, 0, rank);
  if (batches == 0 || m == 0 || n == 0)
    return Status::success();
  auto stream = static_cast<cudaStream_t>(call.stream);
  if (k == 0) {
    LOOM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out.data, 0, out.bytes(), stream),
                              "matmul");
    return Status::success();
  }

  // Column-major D [N, M] = op(B)^T op(A)^T: rhs is cuBLAS's A, lhs its B
  // (see the file comment).
  Gemm g;
  g.transA = tb;
  g.aRows = tb ? k : n;
  g.aCols = tb ? n : k;
  g.transB = ta;
  g.bRows = ta ? m : k;
  g.bCols = ta ? k : m;
  g.dRows = n;
  g.dCols = m;
  int64_t batchesB = kernels::product(b.shape, 0, b.shape.size() - 2);
  if (batchesB == 1 && !ta) {
    // One rhs matrix: every lhs row is a row of one [batches * m, k] GEMM.
    g.bCols = g.dCols = batches * m;
    g.a = b.f32();
    g.b = a.f32();
    g.d = out.f32();
    return runGemm(g, stream, "matmul");
  }

  // The batch dims, innermost first, without those of size 1 (nothing
  // moves along them), neighbours merged where one stride carries on the
  // other; the result is packed, so its strides always chain.
  std::vector<BatchDim> groups;
  int64_t strideOut = m * n;
  for (size_t i = rank; i-- > 0;) {
    BatchDim dim{dims.batch[i], dims.strideA[i], dims.strideB[i], strideOut};
    strideOut *= dims.batch[i];
    if (dim.size == 1)
      continue;
    if (!groups.empty()) {
      BatchDim &inner = groups.back();
      if (dim.strideLhs == inner.strideLhs * inner.size &&
          dim.strideRhs == inner.strideRhs * inner.size &&
          dim.strideOut == inner.strideOut * inner.size &&
          inner.size <= kMaxBatch / dim.size) {
        inner.size *= dim.size;
        continue;
      }
    }
    groups.push_back(dim);
  }
  // One matrix each (a transposed lhs without batch dims): one GEMM.
  if (groups.empty())
    groups.push_back(BatchDim{1, 0, 0, 0});
  // The innermost group is cuBLASLt's strided batch, in chunks that an
  // int32 counts; the host walks the outer groups (none for attention's
  // [B, H] products, whose dims merge).
  const BatchDim inner = groups.front();
  int64_t outer = 1;
  for (size_t i = 1; i < groups.size(); ++i)
    outer *= groups[i].size;
  for (int64_t o = 0; o < outer; ++o) {
    // o's index along each outer group, the last group outermost.
    int64_t offsetLhs = 0, offsetRhs = 0, offsetOut = 0, rest = o;
    for (size_t i = 1; i < groups.size(); ++i) {
      int64_t index = rest % groups[i].size;
      rest /= groups[i].size;
      offsetLhs += index * groups[i].strideLhs;
      offsetRhs += index * groups[i].strideRhs;
      offsetOut += index * groups[i].strideOut;
    }
    for (int64_t done = 0; done < inner.size; done += kMaxBatch) {
      g.batch = std::min(kMaxBatch, inner.size - done);
      bool strided = g.batch > 1; // else the strides mean nothing
      // cuBLAS's A is the rhs, its B the lhs.
      g.a = b.f32() + offsetRhs + done * inner.strideRhs;
      g.b = a.f32() + offsetLhs + done * inner.strideLhs;
      g.d = out.f32() + offsetOut + done * inner.strideOut;
      g.strideA = strided ? inner.strideRhs : 0;
      g.strideB = strided ? inner.strideLhs : 0;
      g.strideD = strided ? inner.strideOut : 0;
      LOOM_RETURN_IF_ERROR(runGemm(g, stream, "matmul"));
    }
  }
  return Status::success();
}
