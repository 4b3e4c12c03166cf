//===- MpiCollectives.h - A job of CPU processes over MPI -------*- C++ -*-===//
//
// The Collectives of a job that an MPI launcher started (`mpirun -np 4
// loom train ...`, a cluster's `srun`): one rank per process, MPI's own
// transport between them (shared memory on one machine, the network across
// machines). All-reduces are MPI's nonblocking ones; progress() drives them
// between the steps that compute while they are in flight, and every wait
// ends after the job's timeout with a message, so that a rank that died or
// hangs ends the job instead of stalling it.
//
// Tensors are host memory (the CPU device); GPUs exchange theirs with NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_MPI_MPICOLLECTIVES_H
#define LOOM_RUNTIME_MPI_MPICOLLECTIVES_H

#include "runtime/Collectives.h"

#include <memory>

namespace loom::runtime {

/// Whether an MPI launcher started this process (the environment mpirun,
/// Open MPI's and PMIx's, or srun with PMI sets).
bool launchedByMpiLauncher();

/// This process's rank of the job it was launched into, joining it (MPI is
/// initialized once per process and finalized at exit). Every wait gives
/// up after `timeoutSeconds`.
ErrorOr<std::shared_ptr<Collectives>> joinMpiJob(double timeoutSeconds);

/// This rank's index among the ranks on its machine: which GPU it takes.
ErrorOr<int> mpiLocalRank();

/// Leaves the job (MPI_Finalize), which every rank does at its end once no
/// collective is in flight; a process that exits without it is taken by
/// the launcher for a failed rank.
Status leaveMpiJob();

} // namespace loom::runtime

#endif // LOOM_RUNTIME_MPI_MPICOLLECTIVES_H
