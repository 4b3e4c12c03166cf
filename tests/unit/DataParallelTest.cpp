//===- DataParallelTest.cpp - Ranks that train as one process would ------===//
//
// loom-data-parallel's arithmetic on the real model, on the f64 reference
// interpreter: two ranks, each an interpreter on its own thread with its
// own share of a batch (padded to its own longest sentence), whose
// loom.all_reduce ops meet and sum, compute the loss, the gradients and the
// updated parameters that one process computes on the whole batch. Dropout
// is off: each rank would draw its masks from its own rows' indices.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"
#include "frontend/Transformer.h"
#include "passes/Pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

using namespace loom;

namespace {

/// The all-reduce of a job whose ranks are threads: each rank's call
/// blocks until every rank has made its own, then all get the sums.
class ThreadJob {
public:
  explicit ThreadJob(int ranks) : ranks(ranks), contributions(ranks) {}

  llvm::Expected<std::vector<HostTensor>>
  allReduce(int rank, llvm::ArrayRef<const HostTensor *> operands) {
    std::unique_lock<std::mutex> lock(mutex);
    int generation = round;
    contributions[rank].clear();
    for (const HostTensor *t : operands)
      contributions[rank].push_back(*t);
    if (++arrived == ranks) {
      sums = contributions[0];
      for (int r = 1; r < ranks; ++r) {
        if (contributions[r].size() != sums.size())
          return llvm::createStringError("ranks all-reduce different lists");
        for (size_t i = 0; i < sums.size(); ++i)
          for (size_t k = 0; k < sums[i].data.size(); ++k)
            sums[i].data[k] += contributions[r][i].data[k];
      }
      arrived = 0;
      ++round;
      ++calls;
      done.notify_all();
    } else {
      done.wait(lock, [&] { return round != generation; });
    }
    return sums;
  }

  int calls = 0;

private:
  int ranks;
  std::mutex mutex;
  std::condition_variable done;
  int arrived = 0, round = 0;
  std::vector<std::vector<HostTensor>> contributions;
  std::vector<HostTensor> sums;
};

/// Rows [begin, end) of a padded id batch, without the columns that are
/// padding in all of them.
HostTensor rows(const HostTensor &ids, int64_t begin, int64_t end) {
  int64_t width = ids.shape[1], used = 0;
  for (int64_t r = begin; r < end; ++r)
    for (int64_t c = 0; c < width; ++c)
      if (ids.data[r * width + c] != 0)
        used = std::max(used, c + 1);
  HostTensor out({end - begin, used}, ids.kind);
  for (int64_t r = begin; r < end; ++r)
    for (int64_t c = 0; c < used; ++c)
      out.data[(r - begin) * used + c] = ids.data[r * width + c];
  return out;
}

void expectSame(const NamedTensors &actual, const NamedTensors &expected,
                const std::string &what, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (auto &[name, value] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << what << " lost " << name;
    ASSERT_EQ(it->second.shape, value.shape) << what << " " << name;
    EXPECT_LT(test::relativeError(it->second, value), tolerance)
        << what << " " << name;
  }
}

class DataParallel : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = test::makeContext();
    auto preset = presetConfig("tiny");
    ASSERT_TRUE(bool(preset)) << llvm::toString(preset.takeError());
    config = *preset;
    config.set_dropout(0.0);
    TrainingPipelineOptions options;
    options.dModel = config.d_model();
    options.warmup = 10;
    plainModule = buildModelModule(*ctx, config);
    ASSERT_TRUE(plainModule);
    ASSERT_TRUE(mlir::succeeded(runTrainingPipeline(*plainModule, options)));
    // Small buckets, so that there are several.
    options.dataParallel = true;
    options.bucketBytes = 16 << 10;
    parallelModule = buildModelModule(*ctx, config);
    ASSERT_TRUE(parallelModule);
    ASSERT_TRUE(mlir::succeeded(runTrainingPipeline(*parallelModule, options)));

    InterpreterOptions f64;
    f64.f64 = true;
    plain = std::make_unique<InterpretedModel>(*plainModule, f64);
    plain->initParameters(5);

    std::mt19937_64 rng(17);
    int64_t vocab = std::min(config.src_vocab(), config.tgt_vocab());
    // Rank 0's rows are short, rank 1's long: each pads to its own.
    src = test::randomIds(rng, vocab, {2, 3, 1, 6, 5, 4}, 6, false);
    tgt = test::randomIds(rng, vocab, {3, 2, 4, 7, 5, 6}, 7, true);
    inputs = {{"src", src},
              {"tgt", tgt},
              {"seed", HostTensor::scalar(99, DType::I64)},
              {"step", HostTensor::scalar(2, DType::I64)}};
    for (auto &[name, value] : plain->parameters()) {
      HostTensor m(value.shape, DType::F32), v(value.shape, DType::F32);
      std::normal_distribution<double> normal(0.0, 1e-2);
      for (size_t i = 0; i < m.data.size(); ++i) {
        m.data[i] = normal(rng);
        v.data[i] = m.data[i] * m.data[i];
      }
      inputs["exp_avg." + name] = m;
      inputs["exp_avg_sq." + name] = v;
    }
  }

  /// Runs `fn` on two ranks, rows [0, split) and [split, 6), and returns
  /// each rank's results.
  std::vector<NamedTensors> runTwoRanks(llvm::StringRef fn, int64_t split,
                                        ThreadJob &job) {
    NamedTensors first = inputs, second = inputs;
    first["src"] = rows(src, 0, split);
    first["tgt"] = rows(tgt, 0, split);
    second["src"] = rows(src, split, 6);
    second["tgt"] = rows(tgt, split, 6);
    return runRanks(fn, {first, second}, job);
  }

  /// Runs `fn` on one rank per element of `shares`, each on its thread with
  /// its own inputs, and returns each rank's results.
  std::vector<NamedTensors> runRanks(llvm::StringRef fn,
                                     const std::vector<NamedTensors> &shares,
                                     ThreadJob &job) {
    std::vector<NamedTensors> results(shares.size());
    std::vector<std::string> errors(shares.size());
    std::vector<std::thread> threads;
    for (int rank = 0; rank < int(shares.size()); ++rank)
      threads.emplace_back([&, rank] {
        InterpreterOptions options;
        options.f64 = true;
        options.allReduce = [&job, rank](llvm::ArrayRef<const HostTensor *> t) {
          return job.allReduce(rank, t);
        };
        InterpretedModel model(*parallelModule, options);
        model.parameters() = plain->parameters();
        auto out = model.call(fn, shares[rank]);
        if (out)
          results[rank] = std::move(*out);
        else
          errors[rank] = llvm::toString(out.takeError());
      });
    for (std::thread &t : threads)
      t.join();
    for (int rank = 0; rank < int(shares.size()); ++rank)
      EXPECT_EQ(errors[rank], "") << "rank " << rank;
    return results;
  }

  std::unique_ptr<mlir::MLIRContext> ctx;
  TransformerConfig config;
  mlir::OwningOpRef<mlir::ModuleOp> plainModule, parallelModule;
  std::unique_ptr<InterpretedModel> plain;
  HostTensor src, tgt;
  NamedTensors inputs;
};

TEST_F(DataParallel, TwoRanksComputeWhatOneProcessDoesOnTheWholeBatch) {
  auto whole = plain->call("loss_grad", inputs);
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  for (int64_t split : {3, 1}) {
    ThreadJob job(2);
    std::vector<NamedTensors> ranks = runTwoRanks("loss_grad", split, job);
    // The loss and its count, then the buckets of gradients.
    EXPECT_GE(job.calls, 3) << "expected several buckets";
    for (int rank = 0; rank < 2; ++rank)
      expectSame(ranks[rank], *whole,
                 "split " + std::to_string(split) + ", rank " +
                     std::to_string(rank),
                 1e-9);
  }
}

TEST_F(DataParallel, TheStepUpdatesEveryRankAsOneProcess) {
  auto whole = plain->call("train_step", inputs);
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  ThreadJob job(2);
  std::vector<NamedTensors> ranks = runTwoRanks("train_step", 2, job);
  for (int rank = 0; rank < 2; ++rank)
    expectSame(ranks[rank], *whole, "rank " + std::to_string(rank), 1e-9);
}

TEST_F(DataParallel, ARankOfPaddingAloneAddsNothing) {
  // Rank 1's share is all padding (no target tokens): it contributes no
  // tokens and no gradient, and both ranks get rank 0's batch's results.
  HostTensor padding({2, 3}, DType::I32);
  NamedTensors first = inputs;
  first["src"] = rows(src, 0, 3);
  first["tgt"] = rows(tgt, 0, 3);
  auto alone = plain->call("loss_grad", first);
  ASSERT_TRUE(bool(alone)) << llvm::toString(alone.takeError());

  NamedTensors onlyPadding = first;
  onlyPadding["src"] = padding;
  onlyPadding["tgt"] = padding;
  ThreadJob job(2);
  std::vector<NamedTensors> results =
      runRanks("loss_grad", {first, onlyPadding}, job);
  for (int rank = 0; rank < 2; ++rank)
    expectSame(results[rank], *alone, "rank " + std::to_string(rank), 1e-9);
}

TEST_F(DataParallel, OneRankIsThePlainModel) {
  // Without a job (one rank), the data-parallel module is the plain one.
  InterpreterOptions f64;
  f64.f64 = true;
  InterpretedModel alone(*parallelModule, f64);
  alone.parameters() = plain->parameters();
  auto expected = plain->call("train_step", inputs);
  ASSERT_TRUE(bool(expected)) << llvm::toString(expected.takeError());
  auto actual = alone.call("train_step", inputs);
  ASSERT_TRUE(bool(actual)) << llvm::toString(actual.takeError());
  expectSame(*actual, *expected, "one rank", 1e-12);
}

} // namespace
