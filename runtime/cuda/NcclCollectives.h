//===- NcclCollectives.h - A job's GPUs over NCCL ---------------*- C++ -*-===//
//
// The Collectives of a data-parallel job whose ranks each run on a GPU:
// gradients are summed by NCCL (NVLink and PCIe within a machine, the
// network across machines), started on a stream of its own once the
// device's queue has produced them and waited for with the job's timeout
// (after which the communicator is aborted and the rank says why). What the
// ranks share on the host, and NCCL's unique id that wires them up, goes
// through the host job they were launched into (MPI).
//
// NCCL is opened with dlopen when a job first needs it, as cuBLASLt is
// (cuda/CublasLt.h): a runtime built with it starts where NCCL is absent.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_NCCLCOLLECTIVES_H
#define LOOM_RUNTIME_CUDA_NCCLCOLLECTIVES_H

#include "runtime/Collectives.h"

#include <memory>

namespace loom::cuda {

/// Success when NCCL can be opened; Unsupported, saying why, where the
/// machine has none on its library path.
Status ncclAvailable();

/// This rank of `host`'s job on GPU `ordinal`: every rank calls it at the
/// same point, each with its own GPU.
ErrorOr<std::shared_ptr<runtime::Collectives>>
joinNcclJob(std::shared_ptr<runtime::Collectives> host, int ordinal,
            double timeoutSeconds);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_NCCLCOLLECTIVES_H
