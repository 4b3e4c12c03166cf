//===- NcclCollectives.cpp - A job's GPUs over NCCL -----------------------===//

#include "runtime/cuda/NcclCollectives.h"
#include "runtime/cuda/SharedLibrary.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace loom::cuda {

using runtime::CollectiveRequest;
using runtime::Collectives;
using runtime::TensorRef;

namespace {

#define LOOM_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclAllReduce)                                                             \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)                                                              \
  X(ncclGetErrorString)

struct Nccl {
#define LOOM_NCCL_POINTER(name) decltype(&::name) name = nullptr;
  LOOM_NCCL_FUNCTIONS(LOOM_NCCL_POINTER)
#undef LOOM_NCCL_POINTER
};

ErrorOr<Nccl> loadNccl() {
  ErrorOr<void *> library = openCudaLibrary(
      "libnccl", NCCL_MAJOR, "a job on GPUs needs it on the library path");
  if (!library)
    return library.status();
  Nccl table;
#define LOOM_NCCL_RESOLVE(name)                                                \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(*library, #name)); \
  if (!table.name)                                                             \
    return Status::failure("libnccl has no " #name, ErrorCode::Unsupported);
  LOOM_NCCL_FUNCTIONS(LOOM_NCCL_RESOLVE)
#undef LOOM_NCCL_RESOLVE
  return table;
}

ErrorOr<const Nccl *> nccl() {
  static const ErrorOr<Nccl> loaded = loadNccl();
  if (!loaded)
    return loaded.status();
  return &*loaded;
}

} // namespace

Status ncclAvailable() {
  ErrorOr<const Nccl *> api = nccl();
  return api ? Status::success() : api.status();
}

namespace {

Status cudaFailed(const std::string &what, cudaError_t error) {
  return Status::failure(what + ": " + cudaGetErrorString(error),
                         ErrorCode::Internal);
}

ErrorOr<ncclDataType_t> ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  default:
    return Status::failure(std::string("NCCL does not sum ") + dtypeName(dtype),
                           ErrorCode::Unsupported);
  }
}

using Clock = std::chrono::steady_clock;

class NcclCollectives final : public Collectives {
public:
  NcclCollectives(std::shared_ptr<Collectives> host, const Nccl &api,
                  int ordinal, ncclComm_t comm, cudaStream_t stream,
                  double timeout)
      : host(std::move(host)), api(api), ordinal(ordinal), comm(comm),
        stream(stream), timeout(timeout) {}
  ~NcclCollectives() override {
    cudaSetDevice(ordinal);
    if (aborted)
      return;
    api.ncclCommDestroy(comm);
    cudaStreamDestroy(stream);
  }

  int rank() const override { return host->rank(); }
  int size() const override { return host->size(); }
  std::string description() const override {
    return "NCCL on GPU " + std::to_string(ordinal) + ", " +
           host->description();
  }

  struct Request final : CollectiveRequest {
    NcclCollectives *job = nullptr;
    cudaEvent_t done = nullptr;
    ~Request() override {
      if (done)
        cudaEventDestroy(done);
    }
    Status wait() override { return job->waitFor(done); }
  };

  ErrorOr<std::unique_ptr<CollectiveRequest>>
  startAllReduce(const std::vector<TensorRef> &operands,
                 const std::vector<TensorRef> &results) override {
    if (aborted)
      return Status::failure("the job's NCCL communicator was aborted",
                             ErrorCode::Internal);
    if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
      return cudaFailed("cudaSetDevice", e);
    auto request = std::make_unique<Request>();
    request->job = this;
    // The session synchronized the device before the start: the operands
    // are ready, and NCCL runs on its own stream.
    if (ncclResult_t r = api.ncclGroupStart(); r != ncclSuccess)
      return failed("ncclGroupStart", r);
    for (size_t i = 0; i < operands.size(); ++i) {
      ErrorOr<ncclDataType_t> type = ncclType(operands[i].dtype);
      if (!type) {
        api.ncclGroupEnd();
        return type.status();
      }
      if (ncclResult_t r = api.ncclAllReduce(operands[i].data, results[i].data,
                                             size_t(operands[i].numel()), *type,
                                             ncclSum, comm, stream);
          r != ncclSuccess) {
        api.ncclGroupEnd();
        return failed("ncclAllReduce", r);
      }
    }
    if (ncclResult_t r = api.ncclGroupEnd(); r != ncclSuccess)
      return failed("ncclGroupEnd", r);
    if (cudaError_t e =
            cudaEventCreateWithFlags(&request->done, cudaEventDisableTiming);
        e != cudaSuccess)
      return cudaFailed("cudaEventCreate", e);
    if (cudaError_t e = cudaEventRecord(request->done, stream);
        e != cudaSuccess)
      return cudaFailed("cudaEventRecord", e);
    return std::unique_ptr<CollectiveRequest>(std::move(request));
  }

  /// Polls `done` (a rank that died leaves NCCL's kernels spinning, which
  /// a blocking synchronize would never return from) until the timeout.
  Status waitFor(cudaEvent_t done) {
    Clock::time_point start = Clock::now();
    Clock::time_point deadline =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(timeout));
    Status status = Status::success();
    for (;;) {
      cudaError_t e = cudaEventQuery(done);
      if (e == cudaSuccess)
        break;
      if (e != cudaErrorNotReady) {
        status = cudaFailed("an NCCL all-reduce", e);
        break;
      }
      ncclResult_t async = ncclSuccess;
      api.ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        status = failed("an NCCL all-reduce", async);
        break;
      }
      if (Clock::now() > deadline) {
        status = Status::failure(
            "an NCCL all-reduce on rank " + std::to_string(rank()) +
                " did not complete within " + std::to_string(int(timeout)) +
                " s: another rank died, hangs or runs a different step",
            ErrorCode::Internal);
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (!status.ok() && !aborted) {
      // The communicator cannot be trusted after this: abort it so that
      // its kernels stop, and say so to every later call.
      api.ncclCommAbort(comm);
      aborted = true;
    }
    waited += std::chrono::duration<double>(Clock::now() - start).count();
    return status;
  }

  Status allReduceHost(std::vector<double> &values) override {
    return host->allReduceHost(values);
  }
  Status broadcast(std::string &bytes, int root) override {
    return host->broadcast(bytes, root);
  }
  void progress() override { host->progress(); }
  double waitSeconds() const override { return waited + host->waitSeconds(); }

private:
  Status failed(const std::string &what, ncclResult_t r) {
    return Status::failure(what + ": " + api.ncclGetErrorString(r),
                           ErrorCode::Internal);
  }

  std::shared_ptr<Collectives> host;
  const Nccl &api;
  int ordinal;
  ncclComm_t comm;
  cudaStream_t stream;
  double timeout;
  double waited = 0;
  bool aborted = false;
};

} // namespace

ErrorOr<std::shared_ptr<Collectives>>
joinNcclJob(std::shared_ptr<Collectives> host, int ordinal,
            double timeoutSeconds) {
  if (!(timeoutSeconds > 0 && timeoutSeconds < 3.2e7))
    return Status::failure("the job's timeout must be positive and under a "
                           "year");
  ErrorOr<const Nccl *> api = nccl();
  if (!api)
    return api.status();
  // Rank 0 makes the id that wires the communicator; the host job gives it
  // to every rank.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (host->rank() == 0)
    if (ncclResult_t r = (*api)->ncclGetUniqueId(&id); r != ncclSuccess)
      return Status::failure(std::string("ncclGetUniqueId: ") +
                                 (*api)->ncclGetErrorString(r),
                             ErrorCode::Internal);
  std::string bytes(reinterpret_cast<const char *>(&id), sizeof id);
  if (Status shared = host->broadcast(bytes, 0); !shared.ok())
    return shared;
  if (bytes.size() != sizeof id)
    return Status::failure("the NCCL id from rank 0 has the wrong size",
                           ErrorCode::Internal);
  std::memcpy(&id, bytes.data(), sizeof id);
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    return cudaFailed("GPU " + std::to_string(ordinal), e);
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      e != cudaSuccess)
    return cudaFailed("cudaStreamCreate", e);
  ncclComm_t comm = nullptr;
  if (ncclResult_t r =
          (*api)->ncclCommInitRank(&comm, host->size(), id, host->rank());
      r != ncclSuccess) {
    cudaStreamDestroy(stream);
    return Status::failure(std::string("ncclCommInitRank: ") +
                               (*api)->ncclGetErrorString(r),
                           ErrorCode::Internal);
  }
  return std::shared_ptr<Collectives>(new NcclCollectives(
      std::move(host), **api, ordinal, comm, stream, timeoutSeconds));
}

} // namespace loom::cuda
