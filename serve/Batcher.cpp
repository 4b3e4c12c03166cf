//===- Batcher.cpp - Batches across requests ------------------------------===//

#include "serve/Batcher.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace loom::serve {

bool TranslationJob::finish(JobEnd how, Status why) {
  int running = 0;
  if (!state.compare_exchange_strong(running, int(how) + 1))
    return false;
  error = std::move(why);
  // `state` is set before `error`: readers of failure() are the onEnd
  // callback below, called after both. The callback is released once
  // called: it holds the caller's connection, which must not outlive the
  // answer however long the job stays referenced.
  std::function<void(TranslationJob &)> callback = std::move(onEnd);
  onEnd = nullptr;
  if (callback)
    callback(*this);
  return true;
}

Batcher::Batcher(int workerCount, DecodeFn decode, RowsFn rows,
                 BatcherOptions batcherOptions, InFlightFn inFlight)
    : decodeFn(std::move(decode)), rowsFn(std::move(rows)),
      inFlightFn(std::move(inFlight)), options(batcherOptions) {
  for (int w = 0; w < workerCount; ++w)
    workers.emplace_back([this, w] { work(w); });
  expirer = std::thread([this] { expireLateJobs(); });
}

namespace {
/// Orders a heap soonest first.
bool later(
    const std::pair<Clock::time_point, std::weak_ptr<TranslationJob>> &a,
    const std::pair<Clock::time_point, std::weak_ptr<TranslationJob>> &b) {
  return a.first > b.first;
}
} // namespace

void Batcher::expireLateJobs() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    if (stopping && (queue.empty() || deadlines.empty()))
      return;
    if (deadlines.empty()) {
      deadlineAdded.wait(lock);
      continue;
    }
    Clock::time_point soonest = deadlines.front().first;
    if (Clock::now() < soonest) {
      deadlineAdded.wait_until(lock, soonest);
      continue;
    }
    std::pop_heap(deadlines.begin(), deadlines.end(), later);
    std::shared_ptr<TranslationJob> job = deadlines.back().second.lock();
    deadlines.pop_back();
    if (job && !job->ended()) {
      lock.unlock();
      job->expire();
      lock.lock();
    }
  }
}

Batcher::~Batcher() {
  stop();
  join();
}

void Batcher::setReportFn(std::function<void(const BatchReport &)> report) {
  std::lock_guard<std::mutex> lock(mutex);
  reportFn = std::move(report);
}

Batcher::Admission Batcher::submit(const std::shared_ptr<TranslationJob> &job) {
  size_t toDecode = 0;
  for (const std::vector<int32_t> &source : job->sources)
    toDecode += !source.empty();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping)
      return Admission::Stopped;
    // Sentences of jobs that ended (cancelled, late) hold no room.
    dropEnded();
    if (int64_t(queue.size() + toDecode) > options.queueCapacity)
      return Admission::QueueFull;
    job->results.assign(job->sources.size(), {});
    // A blank sentence has n-best empty translations.
    for (size_t i = 0; i < job->sources.size(); ++i)
      if (job->sources[i].empty())
        job->results[i].assign(job->options.nbest, Translation{});
    job->remaining = toDecode;
    Clock::time_point now = Clock::now();
    for (size_t i = 0; i < job->sources.size(); ++i)
      if (!job->sources[i].empty())
        queue.push_back({job, i, int64_t(job->sources[i].size()), now});
    if (toDecode > 0 && job->deadline != Clock::time_point::max()) {
      deadlines.emplace_back(job->deadline, job);
      std::push_heap(deadlines.begin(), deadlines.end(), later);
      deadlineAdded.notify_all();
    }
  }
  if (toDecode == 0)
    job->finish(JobEnd::Translated);
  else
    arrived.notify_all();
  return Admission::Queued;
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  arrived.notify_all();
  deadlineAdded.notify_all();
}

void Batcher::join() {
  for (std::thread &worker : workers)
    if (worker.joinable())
      worker.join();
  {
    std::lock_guard<std::mutex> lock(mutex);
    deadlines.clear();
  }
  deadlineAdded.notify_all();
  if (expirer.joinable())
    expirer.join();
}

int64_t Batcher::queuedSentences() const {
  std::lock_guard<std::mutex> lock(mutex);
  return int64_t(queue.size());
}

int Batcher::decodingWorkers() const {
  std::lock_guard<std::mutex> lock(mutex);
  return busyWorkers;
}

void Batcher::dropEnded() {
  Clock::time_point now = Clock::now();
  std::vector<std::shared_ptr<TranslationJob>> late;
  auto gone = [&](const Queued &q) {
    if (q.job->ended())
      return true;
    if (q.job->deadline > now)
      return false;
    late.push_back(q.job);
    return true;
  };
  queue.erase(std::remove_if(queue.begin(), queue.end(), gone), queue.end());
  // onEnd runs here under the queue's lock: it must not call back into
  // the batcher (the server's only posts the answer to its connection).
  for (const std::shared_ptr<TranslationJob> &job : late)
    job->finish(JobEnd::TimedOut);
}

std::vector<size_t> Batcher::pickBatch(bool &full) const {
  const Queued &oldest = queue.front();
  const TranslationOptions &search = oldest.job->options;
  // The sentences that may join the oldest, by length.
  std::vector<size_t> candidates;
  for (size_t i = 0; i < queue.size(); ++i) {
    const Queued &q = queue[i];
    bool joins = options.acrossRequests ? decodeAlike(q.job->options, search)
                                        : q.job == oldest.job;
    if (joins)
      candidates.push_back(i);
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [&](size_t a, size_t b) { return queue[a].length < queue[b].length; });
  size_t at = std::find(candidates.begin(), candidates.end(), size_t(0)) -
              candidates.begin();
  int64_t rows = std::max<int64_t>(1, rowsFn(search));
  // Grow a window of similar lengths around the oldest: each step takes
  // whichever neighbour is nearer in length, if the budget holds it.
  size_t lo = at, hi = at;
  int64_t longest = oldest.length;
  auto fits = [&](size_t candidate) {
    int64_t count = int64_t(hi - lo + 2);
    int64_t width = std::max(longest, queue[candidates[candidate]].length);
    return count <= rows && count * width <= options.maxBatchTokens;
  };
  full = false;
  for (;;) {
    bool left = lo > 0, right = hi + 1 < candidates.size();
    if (!left && !right)
      break;
    auto distance = [&](size_t candidate) {
      return std::llabs(queue[candidates[candidate]].length - oldest.length);
    };
    // The nearer neighbour first; the shorter one on a tie (less padding).
    std::vector<size_t> next;
    if (left)
      next.push_back(lo - 1);
    if (right)
      next.push_back(hi + 1);
    if (next.size() == 2 && distance(hi + 1) < distance(lo - 1))
      std::swap(next[0], next[1]);
    auto fitting = std::find_if(next.begin(), next.end(), fits);
    if (fitting == next.end()) {
      full = true;
      break;
    }
    size_t chosen = *fitting;
    longest = std::max(longest, queue[candidates[chosen]].length);
    if (chosen < lo)
      lo = chosen;
    else
      hi = chosen;
  }
  if (int64_t(hi - lo + 1) >= rows)
    full = true;
  // Without cross-request batching, a request's batch never waits: what
  // it has is all it will get.
  if (!options.acrossRequests)
    full = true;
  std::vector<size_t> picked;
  for (size_t c = lo; c <= hi; ++c)
    picked.push_back(candidates[c]);
  return picked;
}

Batcher::Batch Batcher::nextBatch() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    dropEnded();
    if (queue.empty()) {
      if (stopping)
        return {};
      arrived.wait(lock);
      continue;
    }
    bool full = false;
    std::vector<size_t> picked = pickBatch(full);
    Clock::time_point leaveBy = queue.front().arrived + options.maxWait;
    // The deadline of a job in the batch also ends the wait: waiting past
    // it would only time the job out.
    for (size_t i : picked)
      leaveBy = std::min(leaveBy, queue[i].job->deadline);
    // Waiting pays only when more sentences are on their way: as many as
    // the last batch took (clients answered together ask again together),
    // and only while no other worker decodes (sentences arriving meanwhile
    // gather for the next free worker anyway, while this one's wait would
    // leave a core idle). A lone client's sentence leaves at once.
    bool expectMore = int64_t(picked.size()) < lastBatchSentences;
    if (!full && expectMore && busyWorkers == 0 && !stopping &&
        Clock::now() < leaveBy) {
      arrived.wait_until(lock, leaveBy);
      continue;
    }
    lastBatchSentences = int64_t(picked.size());
    ++busyWorkers;
    Batch batch;
    for (size_t i : picked)
      batch.push_back(queue[i]);
    std::sort(picked.rbegin(), picked.rend());
    for (size_t i : picked)
      queue.erase(queue.begin() + std::ptrdiff_t(i));
    return batch;
  }
}

void Batcher::work(int worker) {
  // A batch is dropped before the next is awaited: its jobs (and their
  // callbacks) are not kept alive while the worker idles.
  for (;;) {
    Batch batch = nextBatch();
    if (batch.empty())
      return;
    decode(worker, batch);
    std::lock_guard<std::mutex> lock(mutex);
    --busyWorkers;
  }
}

void Batcher::report(const BatchReport &report) {
  // Reported before any job ends: a client holding its answer finds its
  // batch counted.
  std::function<void(const BatchReport &)> reportNow;
  {
    std::lock_guard<std::mutex> lock(mutex);
    reportNow = reportFn;
  }
  if (reportNow)
    reportNow(report);
}

void Batcher::deliver(Queued &q, std::vector<Translation> translations) {
  TranslationJob &job = *q.job;
  if (job.ended())
    return;
  job.results[q.sentence] = std::move(translations);
  // The last sentence in ends the job; acq_rel orders every worker's
  // result before the end.
  if (job.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1)
    job.finish(JobEnd::Translated);
}

Translator::JoiningSources Batcher::sourcesOf(const Batch &batch, size_t from) {
  Translator::JoiningSources part;
  bool anyPrefix = false;
  for (size_t i = from; i < batch.size(); ++i)
    anyPrefix = anyPrefix || !batch[i].job->prefixes.empty();
  for (size_t i = from; i < batch.size(); ++i) {
    const Queued &q = batch[i];
    part.sources.push_back(&q.job->sources[q.sentence]);
    // Messages name a sentence by its place in its request.
    part.numbers.push_back(int64_t(q.sentence) + 1);
    if (anyPrefix)
      part.prefixes.push_back(q.job->prefixes.empty()
                                  ? std::vector<int32_t>{}
                                  : q.job->prefixes[q.sentence]);
  }
  return part;
}

void Batcher::decode(int worker, Batch &batch) {
  if (options.inFlight && options.acrossRequests && inFlightFn) {
    decodeInFlight(worker, batch);
    return;
  }
  int64_t longest = 0;
  for (const Queued &q : batch)
    longest = std::max(longest, q.length);
  Translator::JoiningSources part = sourcesOf(batch, 0);
  Clock::time_point start = Clock::now();
  ErrorOr<std::vector<std::vector<Translation>>> decoded =
      decodeFn(worker, part.sources, part.numbers, batch.front().job->options,
               part.prefixes);
  BatchReport batchReport;
  batchReport.sentences = int64_t(batch.size());
  batchReport.paddedTokens = batchReport.sentences * longest;
  batchReport.seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (decoded) {
    batchReport.translated = int64_t(decoded->size());
    for (const std::vector<Translation> &found : *decoded)
      if (!found.empty())
        batchReport.targetTokens += found.front().tokens;
  }
  report(batchReport);
  if (!decoded) {
    for (Queued &q : batch)
      q.job->finish(JobEnd::Failed, decoded.status());
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i)
    deliver(batch[i], std::move((*decoded)[i]));
}

void Batcher::decodeInFlight(int worker, Batch &batch) {
  // Copied: the first job may end (and be dropped) while the batch runs.
  const TranslationOptions search = batch.front().job->options;
  // Every sentence of the run, by its index in done(): the batch's, then
  // those that joined. Each holds its job, and so its source, alive.
  Batch running = batch;
  // At each join the decoder pads every source to the longest among the
  // sentences decoding and joining: what the token budget counts, from
  // the lengths of the sentences decoding (`width`, between joins, is the
  // padding the decoder holds).
  std::multiset<int64_t> liveLengths;
  for (const Queued &q : batch)
    liveLengths.insert(q.length);
  int64_t width = *liveLengths.rbegin(), live = int64_t(batch.size());
  // Reported at each join and at the end: the most sentences decoding
  // together since the last report. Each sentence is reported as it ends,
  // before its job can end.
  BatchReport window;
  int64_t peak = live;
  Clock::time_point since = Clock::now();
  auto reportWindow = [&] {
    Clock::time_point now = Clock::now();
    window.seconds = std::chrono::duration<double>(now - since).count();
    window.sentences = peak;
    window.paddedTokens = peak * width;
    report(window);
    window = BatchReport{};
    peak = live;
    since = now;
  };
  // Joining copies every cache of the batch to lay out its new rows: a
  // quarter of the rows at a time pays for it, unless the batch has shrunk
  // to half, where every sentence counts.
  const int64_t rows = std::max<int64_t>(1, rowsFn(search));
  auto more = [&](int64_t room) {
    size_t from = running.size();
    if (room < std::max<int64_t>(1, rows / 4) && live > rows / 2)
      return sourcesOf(running, from);
    {
      std::lock_guard<std::mutex> lock(mutex);
      dropEnded();
      // Oldest first, of those decoded alike, while the budget holds.
      int64_t widest = liveLengths.empty() ? 0 : *liveLengths.rbegin();
      for (auto q = queue.begin();
           q != queue.end() && int64_t(running.size() - from) < room;) {
        int64_t wider = std::max(widest, q->length);
        int64_t count = live + int64_t(running.size() - from) + 1;
        if (decodeAlike(q->job->options, search) &&
            count * wider <= options.maxBatchTokens) {
          widest = wider;
          running.push_back(*q);
          q = queue.erase(q);
        } else {
          ++q;
        }
      }
    }
    if (running.size() > from) {
      reportWindow();
      for (size_t i = from; i < running.size(); ++i)
        liveLengths.insert(running[i].length);
      live += int64_t(running.size() - from);
      peak = live;
      width = *liveLengths.rbegin();
    }
    return sourcesOf(running, from);
  };
  auto done = [&](size_t i, std::vector<Translation> translations) {
    BatchReport ended;
    ended.translated = 1;
    if (!translations.empty())
      ended.targetTokens = translations.front().tokens;
    report(ended);
    --live;
    liveLengths.erase(liveLengths.find(running[i].length));
    deliver(running[i], std::move(translations));
  };
  Status status = inFlightFn(worker, sourcesOf(running, 0), search, more, done);
  reportWindow();
  if (!status.ok())
    for (Queued &q : running)
      q.job->finish(JobEnd::Failed, status);
}

} // namespace loom::serve
