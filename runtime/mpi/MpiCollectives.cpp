//===- MpiCollectives.cpp - A job of CPU processes over MPI ---------------===//

#include "runtime/mpi/MpiCollectives.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

namespace loom::runtime {

namespace {

using Clock = std::chrono::steady_clock;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

Status failed(const std::string &what, int code) {
  return Status::failure(what + ": " + mpiError(code), ErrorCode::Internal);
}

ErrorOr<MPI_Datatype> mpiType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  default:
    // MPI has no sum of half-precision floats.
    return Status::failure(std::string("MPI all-reduces f32 and f64, not ") +
                               dtypeName(dtype),
                           ErrorCode::Unsupported);
  }
}

class MpiCollectives;

/// Waits for `requests`, calling MPI to progress them, until the deadline.
Status waitAll(std::vector<MPI_Request> &requests, double timeoutSeconds,
               const char *what, int rank) {
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (int rc = MPI_Testall(int(requests.size()), requests.data(), &done,
                             MPI_STATUSES_IGNORE);
        rc != MPI_SUCCESS)
      return failed(std::string(what) + " on rank " + std::to_string(rank), rc);
    if (done)
      return Status::success();
    if (Clock::now() > deadline)
      return Status::failure(
          std::string(what) + " on rank " + std::to_string(rank) +
              " did not complete within " +
              std::to_string(int(timeoutSeconds)) +
              " s: another rank died, hangs or runs a different step",
          ErrorCode::Internal);
    // Spin briefly (an all-reduce on one machine takes microseconds), then
    // give the core back.
    if (spins > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

class MpiRequest : public CollectiveRequest {
public:
  MpiRequest(MpiCollectives &job, std::vector<MPI_Request> requests);
  ~MpiRequest() override;
  Status wait() override;
  /// Lets MPI move this all-reduce's data, without waiting.
  void test() {
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
  }

private:
  MpiCollectives &job;
  std::vector<MPI_Request> requests;
};

class MpiCollectives : public Collectives {
public:
  MpiCollectives(int rank, int size, double timeoutSeconds)
      : rankIndex(rank), ranks(size), timeout(timeoutSeconds) {}

  int rank() const override { return rankIndex; }
  int size() const override { return ranks; }
  std::string description() const override {
    return "MPI, rank " + std::to_string(rankIndex) + " of " +
           std::to_string(ranks);
  }

  ErrorOr<std::unique_ptr<CollectiveRequest>>
  startAllReduce(const std::vector<TensorRef> &operands,
                 const std::vector<TensorRef> &results) override {
    std::vector<MPI_Request> requests;
    for (size_t i = 0; i < operands.size(); ++i) {
      ErrorOr<MPI_Datatype> type = mpiType(operands[i].dtype);
      if (!type)
        return type.status();
      int64_t count = operands[i].numel();
      if (count > INT32_MAX)
        return Status::failure("an all-reduce of " + std::to_string(count) +
                                   " elements is more than MPI's int count",
                               ErrorCode::Unsupported);
      MPI_Request request;
      if (int rc = MPI_Iallreduce(operands[i].data, results[i].data, int(count),
                                  *type, MPI_SUM, MPI_COMM_WORLD, &request);
          rc != MPI_SUCCESS)
        return failed("MPI_Iallreduce", rc);
      requests.push_back(request);
    }
    return std::unique_ptr<CollectiveRequest>(
        new MpiRequest(*this, std::move(requests)));
  }

  void progress() override {
    for (MpiRequest *request : active)
      request->test();
  }

  Status allReduceHost(std::vector<double> &values) override {
    MPI_Request request;
    if (int rc = MPI_Iallreduce(MPI_IN_PLACE, values.data(), int(values.size()),
                                MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
        rc != MPI_SUCCESS)
      return failed("MPI_Iallreduce", rc);
    std::vector<MPI_Request> requests = {request};
    return timedWait(requests, "an all-reduce of host values");
  }

  Status broadcast(std::string &bytes, int root) override {
    // The size, then the bytes, in pieces MPI's int count can hold.
    uint64_t size = bytes.size();
    std::vector<MPI_Request> requests(1);
    if (int rc = MPI_Ibcast(&size, 1, MPI_UINT64_T, root, MPI_COMM_WORLD,
                            &requests[0]);
        rc != MPI_SUCCESS)
      return failed("MPI_Ibcast", rc);
    LOOM_RETURN_IF_ERROR(timedWait(requests, "a broadcast"));
    bytes.resize(size);
    constexpr uint64_t kPiece = 1 << 30;
    for (uint64_t at = 0; at < size; at += kPiece) {
      int count = int(std::min(kPiece, size - at));
      if (int rc = MPI_Ibcast(bytes.data() + at, count, MPI_BYTE, root,
                              MPI_COMM_WORLD, &requests[0]);
          rc != MPI_SUCCESS)
        return failed("MPI_Ibcast", rc);
      LOOM_RETURN_IF_ERROR(timedWait(requests, "a broadcast"));
    }
    return Status::success();
  }

  double waitSeconds() const override { return waited; }

  Status timedWait(std::vector<MPI_Request> &requests, const char *what) {
    Clock::time_point start = Clock::now();
    Status status = waitAll(requests, timeout, what, rankIndex);
    waited += std::chrono::duration<double>(Clock::now() - start).count();
    return status;
  }

  /// The all-reduces started and not yet waited for or dropped.
  std::set<MpiRequest *> active;

private:
  int rankIndex, ranks;
  double timeout;
  double waited = 0;
};

MpiRequest::MpiRequest(MpiCollectives &job, std::vector<MPI_Request> requests)
    : job(job), requests(std::move(requests)) {
  job.active.insert(this);
}

MpiRequest::~MpiRequest() {
  job.active.erase(this);
  // A request dropped unfinished (its run failed): MPI must still own the
  // buffers until it ends, which only the end of the job guarantees.
  for (MPI_Request &request : requests)
    if (request != MPI_REQUEST_NULL)
      MPI_Request_free(&request);
}

Status MpiRequest::wait() {
  return job.timedWait(requests, "an all-reduce of gradients");
}

} // namespace

ErrorOr<int> mpiLocalRank() {
  MPI_Comm local;
  if (int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                   MPI_INFO_NULL, &local);
      rc != MPI_SUCCESS)
    return failed("MPI_Comm_split_type", rc);
  int rank = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  return rank;
}

Status leaveMpiJob() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return Status::success();
  if (int rc = MPI_Finalize(); rc != MPI_SUCCESS)
    return failed("MPI_Finalize", rc);
  return Status::success();
}

bool launchedByMpiLauncher() {
  for (const char *variable :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(variable))
      return true;
  return false;
}

ErrorOr<std::shared_ptr<Collectives>> joinMpiJob(double timeoutSeconds) {
  // Past a year the deadline's clock arithmetic would overflow.
  if (!(timeoutSeconds > 0 && timeoutSeconds < 3.2e7))
    return Status::failure("the job's timeout must be positive and under a "
                           "year");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // Only the thread that runs the session calls MPI.
    if (int rc =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        rc != MPI_SUCCESS)
      return failed("MPI_Init_thread", rc);
    // Errors come back as codes, which become messages, rather than
    // aborting the process where they happen.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::shared_ptr<Collectives>(
      new MpiCollectives(rank, size, timeoutSeconds));
}

} // namespace loom::runtime
