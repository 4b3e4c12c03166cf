//===- Batcher.h - Batches across requests ----------------------*- C++ -*-===//
//
// The heart of `loom serve`: the sentences of concurrent requests enter one
// bounded queue, and each decoder worker takes from it the next batch it
// decodes. A batch is formed around the oldest waiting sentence, from the
// sentences of any request that asked for the same search (decodeAlike:
// beam, length penalty, n-best, lengths, controls), nearest to it in length
// first, until the token budget (sentences x longest source) or the decoder's
// rows are full. A batch that is full leaves at once. One that is not waits for
// more sentences, at most maxWait after its oldest arrived, only while it holds
// fewer than the last batch took (clients answered together send their
// next requests together, a moment apart, and the wait gathers them; a lone
// client's sentence is not kept waiting for company that never comes), and
// only while no other worker is decoding (what arrives meanwhile gathers
// for the next free worker anyway).
//
//   queue: [a1 a2 a3] [b1] [c1 c2]          (requests a, b, c; a2 longest)
//   worker 0 takes  a1 b1 c1 c2  (similar lengths, one budget)
//   worker 1 takes  a3 a2
//   a's translations go back in a1 a2 a3 order once both batches are done.
//
// A job (one request's sentences) ends once, in one of four ways: every
// sentence translated, a decoding error, its deadline passed, or cancelled
// (the client went away). Sentences of an ended job that are still queued
// are dropped as batches form; a batch already decoding finishes and its
// results are discarded. A translation does not depend on what it was
// batched with (Translator::decodeBatch), so batching changes speed only.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_BATCHER_H
#define LOOM_SERVE_BATCHER_H

#include "api/Translator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::serve {

using Clock = std::chrono::steady_clock;

/// How a job ended.
enum class JobEnd { Translated, Failed, TimedOut, Cancelled };

class Batcher;

/// One request's sentences on their way through the batcher. Shared by the
/// caller and the queue; the caller learns the end through `onEnd`.
class TranslationJob {
public:
  /// Per source, as Translator::encodeParts made it (empty: blank).
  std::vector<std::vector<int32_t>> sources;
  /// None, or per source the tokens its translation starts with.
  std::vector<std::vector<int32_t>> prefixes;
  TranslationOptions options;
  Clock::time_point deadline = Clock::time_point::max();
  /// Called once, from whichever thread ends the job (a worker, or the
  /// caller through cancel() or expire()).
  std::function<void(TranslationJob &)> onEnd;

  /// Valid once the job ended Translated: per sentence its n-best.
  const std::vector<std::vector<Translation>> &translations() const {
    return results;
  }
  JobEnd end() const { return JobEnd(state.load() - 1); }
  /// Why a Failed job failed.
  const Status &failure() const { return error; }
  bool ended() const { return state.load() != 0; }

  /// The client went away: its queued sentences are dropped.
  void cancel() { finish(JobEnd::Cancelled); }
  /// The deadline passed: ends the job TimedOut unless it already ended.
  void expire() { finish(JobEnd::TimedOut); }

private:
  friend class Batcher;
  /// Ends the job as `how` unless it already ended; true if this call did.
  bool finish(JobEnd how, Status why = Status::success());

  std::vector<std::vector<Translation>> results;
  std::atomic<size_t> remaining{0};
  std::atomic<int> state{0}; // 0 running, else JobEnd + 1
  Status error = Status::success();
};

struct BatcherOptions {
  /// Padded source tokens (sentences x longest source, eos included) a batch
  /// holds at most; a sentence longer than this is a batch of its own.
  int64_t maxBatchTokens = 4096;
  /// How long a batch that is not full waits for more sentences.
  std::chrono::microseconds maxWait = std::chrono::milliseconds(5);
  /// Sentences waiting, across requests, beyond which submit() refuses.
  int64_t queueCapacity = 4096;
  /// Off: a batch holds the sentences of one request only, and never
  /// waits (what a server without cross-request batching does).
  bool acrossRequests = true;
  /// With acrossRequests, and a decoder that can (InFlightFn): queued
  /// sentences join a batch while it decodes, as others in it end. Off by
  /// default: each join and each sentence leaving copies the batch's caches
  /// and every row attends over the oldest sentence's positions, which
  /// today costs more than whole batches save (docs/PERFORMANCE.md).
  bool inFlight = false;
};

/// What a worker reports of each batch it decoded. In flight, of the batch
/// at each join (its most sentences since the last join, and the time
/// since), and apart, with no sentence decoding, of each sentence that ends.
struct BatchReport {
  int64_t sentences = 0;    // decoding together; 0: a sentence's end alone
  int64_t paddedTokens = 0; // sentences x longest source
  int64_t targetTokens = 0; // of the best translations that ended
  int64_t translated = 0;   // sentences that ended
  double seconds = 0;
};

class Batcher {
public:
  /// Decodes `sources` together on `worker` (Translator::decodeBatch), with
  /// their target prefixes (none, or one per source).
  using DecodeFn = std::function<ErrorOr<std::vector<std::vector<Translation>>>(
      int worker, const std::vector<const std::vector<int32_t> *> &sources,
      const std::vector<int64_t> &numbers, const TranslationOptions &options,
      const std::vector<std::vector<int32_t>> &prefixes)>;
  /// The most sentences a batch of `options` takes (the decoder's rows).
  using RowsFn = std::function<int64_t(const TranslationOptions &options)>;
  /// Decodes a batch in flight (Translator::decodeInFlight): `first`
  /// starts it, more(room) hands over sentences that join it, done(i, ...)
  /// takes each sentence's translations as it ends.
  using InFlightFn = std::function<Status(
      int worker, const Translator::JoiningSources &first,
      const TranslationOptions &options,
      const std::function<Translator::JoiningSources(int64_t room)> &more,
      const std::function<void(size_t, std::vector<Translation>)> &done)>;

  /// Starts `workers` threads, worker i decoding with decode(i, ...), or
  /// in flight with inFlight(i, ...) where given and options.inFlight.
  Batcher(int workers, DecodeFn decode, RowsFn rows, BatcherOptions options,
          InFlightFn inFlight = nullptr);
  /// Stops taking jobs, decodes what is queued, joins the workers.
  ~Batcher();

  enum class Admission { Queued, QueueFull, Stopped };
  /// Queues `job` (its sources, options and onEnd set). Refused, with the
  /// job untouched, when the queue has no room for its sentences (the
  /// caller answers "busy") or after stop(). A job without a sentence to
  /// decode ends Translated before submit returns.
  Admission submit(const std::shared_ptr<TranslationJob> &job);

  /// Refuses new jobs; the workers end once the queue is empty.
  void stop();
  /// Waits for the workers after stop().
  void join();

  /// Sentences waiting to be batched.
  int64_t queuedSentences() const;
  /// Workers decoding a batch now.
  int decodingWorkers() const;
  /// Called after every batch, from the worker that decoded it.
  void setReportFn(std::function<void(const BatchReport &)> report);

private:
  struct Queued {
    std::shared_ptr<TranslationJob> job;
    size_t sentence;
    int64_t length;
    Clock::time_point arrived;
  };
  using Batch = std::vector<Queued>;

  void work(int worker);
  /// The next batch, waiting for one; empty once stopped and drained.
  Batch nextBatch();
  /// Picks the batch around the oldest sentence; sets `full` when it
  /// cannot grow. Called with `mutex` held, the queue not empty.
  std::vector<size_t> pickBatch(bool &full) const;
  void dropEnded();
  void decode(int worker, Batch &batch);
  /// decode() in flight: queued sentences alike `batch`'s join it as the
  /// decoder makes room, oldest first, within the token budget.
  void decodeInFlight(int worker, Batch &batch);
  /// What the decoder takes of batch[from...]: sources, numbers in their
  /// requests, and prefixes (none, or one per source where any has one).
  static Translator::JoiningSources sourcesOf(const Batch &batch, size_t from);
  /// A sentence's translations to its job, which ends with its last.
  static void deliver(Queued &q, std::vector<Translation> translations);
  void report(const BatchReport &report);
  /// Ends each job whose deadline passes while it waits, even when every
  /// worker is busy and no batch is being formed.
  void expireLateJobs();

  DecodeFn decodeFn;
  RowsFn rowsFn;
  InFlightFn inFlightFn;
  BatcherOptions options;
  std::function<void(const BatchReport &)> reportFn;

  mutable std::mutex mutex;
  std::condition_variable arrived;
  std::deque<Queued> queue;
  bool stopping = false;
  /// Sentences the last batch took: what a batch that is not full waits
  /// for (at most maxWait).
  int64_t lastBatchSentences = 1;
  /// Workers decoding a batch now.
  int busyWorkers = 0;
  std::vector<std::thread> workers;
  /// Jobs with a deadline, soonest first, for expireLateJobs.
  std::vector<std::pair<Clock::time_point, std::weak_ptr<TranslationJob>>>
      deadlines;
  std::condition_variable deadlineAdded;
  std::thread expirer;
};

} // namespace loom::serve

#endif // LOOM_SERVE_BATCHER_H
