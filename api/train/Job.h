//===- Job.h - A run as one rank of a data-parallel job ---------*- C++ -*-===//
//
// Under an MPI launcher (mpirun, srun) a training process is one rank of a
// data-parallel job: every rank draws the same batches and runs its share,
// and gradients are summed across ranks, over MPI on CPUs and over NCCL on
// GPUs (each rank on the GPU of its index among the ranks of its machine).
// `loom train` and `loom-train` join a job the same way, here.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_JOB_H
#define LOOM_API_TRAIN_JOB_H

#include "abi/Error.h"
#include "runtime/Collectives.h"

#include <memory>
#include <string>

namespace loom::train {

/// A week: a wait longer than that is a hang whatever the job.
inline constexpr double kMaxCommTimeout = 7 * 24 * 3600;

/// This process's rank of the job it was launched into, when it was
/// launched as one of several processes; null otherwise. A rank waits
/// `timeoutSeconds` for the others before it ends the job.
ErrorOr<std::shared_ptr<runtime::Collectives>>
joinLaunchedJob(double timeoutSeconds);

/// The device a rank of `job` trains on: "cuda" becomes "cuda:<the rank's
/// index on its machine>"; anything else stays. A job on GPUs needs NCCL.
ErrorOr<std::string> rankDevice(const std::string &device,
                                const runtime::Collectives *job);

/// For a job on GPUs, the job with its gradients summed by NCCL on
/// `device` ("cuda:N"); a job on CPUs as it is.
ErrorOr<std::shared_ptr<runtime::Collectives>>
jobOnDevice(std::shared_ptr<runtime::Collectives> job,
            const std::string &device, double timeoutSeconds);

/// A job's ranks leave together when they all finished (an MPI job whose
/// rank exits without saying so is torn down as failed).
Status leaveJob();

} // namespace loom::train

#endif // LOOM_API_TRAIN_JOB_H
