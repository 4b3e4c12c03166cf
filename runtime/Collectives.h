//===- Collectives.h - Communication between the ranks of a job -*- C++ -*-===//
//
// A data-parallel job runs one Session per rank, each on its own device and
// its own share of every batch; what the ranks exchange goes through this
// interface. An executable's COLLECTIVE steps (loom-data-parallel's
// all-reduces) call it: `all_reduce_start` where the all-reduce stands,
// `all_reduce_wait` where its results are first read, so a backend that can
// (MPI's nonblocking calls, NCCL on its own stream) sends while the steps
// between compute. The training loop uses the blocking calls for what it
// shares outside the graph (whether every rank has a batch, metrics).
//
// One implementation per transport, the engines the field runs on: MPI
// between CPU processes (runtime/mpi/), NCCL between GPUs. Without a job a
// Session runs as the only rank: an all-reduce copies its operands.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_H
#define LOOM_RUNTIME_COLLECTIVES_H

#include "runtime/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace loom::runtime {

/// An all-reduce in flight.
class CollectiveRequest {
public:
  virtual ~CollectiveRequest() = default;
  /// Returns once every result holds its sum, or fails (a rank that died,
  /// the job's timeout) with a message that says which.
  virtual Status wait() = 0;
};

class Collectives {
public:
  virtual ~Collectives() = default;

  /// This process's rank, from 0, and the number of ranks.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// One line for logs: "MPI, rank 1 of 4".
  virtual std::string description() const = 0;

  /// Starts summing each `operands[i]` over the ranks into `results[i]`
  /// (same dtype and shape, in the memory of the device the session runs
  /// on). Every rank starts the same all-reduces in the same order.
  virtual ErrorOr<std::unique_ptr<CollectiveRequest>>
  startAllReduce(const std::vector<TensorRef> &operands,
                 const std::vector<TensorRef> &results) = 0;

  /// Advances the all-reduces in flight without waiting: the session calls
  /// it between steps, for transports that move data only when called.
  virtual void progress() {}

  /// Sums host `values` over the ranks, in place, and returns when done.
  virtual Status allReduceHost(std::vector<double> &values) = 0;
  /// Gives every rank `root`'s `bytes` (what one rank made for all: the
  /// vocabulary it trained).
  virtual Status broadcast(std::string &bytes, int root) = 0;
  /// Seconds spent blocked in wait() and allReduceHost() so far.
  virtual double waitSeconds() const = 0;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_COLLECTIVES_H
