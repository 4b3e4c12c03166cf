//===- NcclCollectivesTest.cpp - A job's GPUs over NCCL -------------------===//
//
// NCCL's all-reduce as the session calls it, on this machine's GPUs: a job
// of one rank per GPU, the ranks threads of this process joined by a host
// job in memory (MPI's part: the id that wires them, broadcast). The sums
// must be exact for integers held in floats, and a timeout must end a wait
// that cannot finish. Skipped without a GPU (failed when LOOM_REQUIRE_DEVICE
// is cuda) or, with NCCL's reason, without NCCL.
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"

#include "runtime/Collectives.h"
#include "runtime/Device.h"
#ifdef LOOM_NCCL
#include "runtime/cuda/NcclCollectives.h"

#include <cuda_runtime.h>
#endif

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace loom;
using namespace loom::runtime;

namespace {

/// The host side of a job of threads: broadcast alone is needed here.
class ThreadHostJob {
public:
  explicit ThreadHostJob(int ranks) : ranks(ranks) {}
  void broadcast(std::string &bytes, int rank) {
    std::unique_lock<std::mutex> lock(mutex);
    if (rank == 0) {
      shared = bytes;
      ready = true;
      changed.notify_all();
    } else {
      changed.wait(lock, [&] { return ready; });
      bytes = shared;
    }
  }
  int ranks;

private:
  std::mutex mutex;
  std::condition_variable changed;
  std::string shared;
  bool ready = false;
};

class ThreadHost : public Collectives {
public:
  ThreadHost(ThreadHostJob &job, int rank) : job(job), index(rank) {}
  int rank() const override { return index; }
  int size() const override { return job.ranks; }
  std::string description() const override { return "threads"; }
  ErrorOr<std::unique_ptr<CollectiveRequest>>
  startAllReduce(const std::vector<TensorRef> &,
                 const std::vector<TensorRef> &) override {
    return Status::failure("not on the host");
  }
  Status allReduceHost(std::vector<double> &) override {
    return Status::failure("not used here");
  }
  Status broadcast(std::string &bytes, int root) override {
    EXPECT_EQ(root, 0);
    job.broadcast(bytes, index);
    return Status::success();
  }
  double waitSeconds() const override { return 0; }

private:
  ThreadHostJob &job;
  int index;
};

TEST(NcclCollectives, EveryGpuSumsWhatEveryRankSent) {
#ifndef LOOM_NCCL
  GTEST_SKIP() << "this runtime was built without NCCL";
#else
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    if (test::deviceRequired("cuda"))
      FAIL() << "LOOM_REQUIRE_DEVICE=cuda but the CUDA runtime sees no GPU";
    GTEST_SKIP() << "no GPU on this machine";
  }
  // NCCL is opened at run time; where the machine has none on its library
  // path (it may live only inside a Python package) the test says so.
  if (Status nccl = cuda::ncclAvailable(); !nccl.ok())
    GTEST_SKIP() << nccl.message();
  const int64_t n = 1 << 20;
  std::vector<std::string> errors(gpus);
  std::vector<std::vector<float>> sums(gpus);
  ThreadHostJob hostJob(gpus);
  std::vector<std::thread> ranks;
  for (int r = 0; r < gpus; ++r)
    ranks.emplace_back([&, r] {
      auto fail = [&](const std::string &why) { errors[r] = why; };
      ErrorOr<std::shared_ptr<Device>> device =
          openDevice("cuda:" + std::to_string(r), 1);
      if (!device)
        return fail(device.error());
      auto job =
          cuda::joinNcclJob(std::make_shared<ThreadHost>(hostJob, r), r, 60);
      if (!job)
        return fail(job.error());
      // Rank r sends r + i % 7 in element i: integers, summed exactly.
      Tensor host = test::hostTensor(DType::F32, {n});
      for (int64_t i = 0; i < n; ++i)
        host.f32()[i] = float(r + i % 7);
      ErrorOr<Tensor> in = toDevice(**device, host.ref());
      ErrorOr<Tensor> out = Tensor::onDevice(**device, DType::F32, {n});
      if (!in || !out)
        return fail("cannot place the tensors");
      auto request = (*job)->startAllReduce({in->ref()}, {out->ref()});
      if (!request)
        return fail(request.error());
      if (Status done = (*request)->wait(); !done.ok())
        return fail(done.message());
      ErrorOr<Tensor> back = toHost(*out);
      if (!back)
        return fail(back.error());
      sums[r].assign(back->f32(), back->f32() + n);
    });
  for (std::thread &t : ranks)
    t.join();
  float rankSum = float(gpus * (gpus - 1) / 2);
  for (int r = 0; r < gpus; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    for (int64_t i = 0; i < n; i += 4099)
      ASSERT_EQ(sums[r][i], rankSum + float(gpus * (i % 7)))
          << "rank " << r << " element " << i;
  }
#endif
}

} // namespace
