//===- Job.cpp - A run as one rank of a data-parallel job -----------------===//

#include "api/train/Job.h"

#include "runtime/mpi/MpiCollectives.h"
#ifdef LOOM_NCCL
#include "runtime/cuda/NcclCollectives.h"
#endif

namespace loom::train {

ErrorOr<std::shared_ptr<runtime::Collectives>>
joinLaunchedJob(double timeoutSeconds) {
  if (!(timeoutSeconds > 0 && timeoutSeconds <= kMaxCommTimeout))
    return Status::failure("--comm-timeout must be in (0, " +
                               std::to_string(int64_t(kMaxCommTimeout)) +
                               "] seconds, got " +
                               std::to_string(timeoutSeconds),
                           ErrorCode::InvalidArgument);
  if (!runtime::launchedByMpiLauncher())
    return std::shared_ptr<runtime::Collectives>();
  ErrorOr<std::shared_ptr<runtime::Collectives>> joined =
      runtime::joinMpiJob(timeoutSeconds);
  if (!joined)
    return joined.status();
  if ((*joined)->size() > 1)
    return *joined;
  return std::shared_ptr<runtime::Collectives>();
}

ErrorOr<std::string> rankDevice(const std::string &device,
                                const runtime::Collectives *job) {
  if (!job || device == "cpu")
    return device;
#ifdef LOOM_NCCL
  if (device != "cuda")
    return device;
  ErrorOr<int> local = runtime::mpiLocalRank();
  if (!local)
    return local.status();
  return "cuda:" + std::to_string(*local);
#else
  return Status::failure("this build has no NCCL (nccl.h was not found): a "
                         "data-parallel job runs on CPU processes only",
                         ErrorCode::Unsupported);
#endif
}

ErrorOr<std::shared_ptr<runtime::Collectives>>
jobOnDevice(std::shared_ptr<runtime::Collectives> job,
            const std::string &device, double timeoutSeconds) {
  if (!job || device == "cpu")
    return job;
#ifdef LOOM_NCCL
  size_t colon = device.find(':');
  int ordinal =
      colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
  return cuda::joinNcclJob(job, ordinal, timeoutSeconds);
#else
  return Status::failure("this build has no NCCL (nccl.h was not found): a "
                         "data-parallel job runs on CPU processes only",
                         ErrorCode::Unsupported);
#endif
}

Status leaveJob() { return runtime::leaveMpiJob(); }

} // namespace loom::train
