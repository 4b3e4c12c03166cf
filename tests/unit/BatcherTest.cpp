//===- BatcherTest.cpp - Batching across requests -------------------------===//
//
// The batcher of `loom serve` with a decoder that records its batches and
// "translates" a sentence into its ids: which sentences share a batch, the
// token budget, the wait, the bounded queue, and how jobs end (translated
// in order, cancelled, late, failed).
//
//===----------------------------------------------------------------------===//

#include "serve/Batcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

using namespace loom;
using namespace loom::serve;
using namespace std::chrono_literals;

namespace {

/// Records each batch as the lengths and first ids of its sentences, and
/// answers each sentence with its ids as text. `gate` holds every decode
/// until opened.
struct RecordingDecoder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<int32_t>> batches; // first id of each sentence
  std::vector<int64_t> paddedTokens;
  bool gateOpen = true;
  int decoding = 0;
  bool fail = false;

  Batcher::DecodeFn fn() {
    return
        [this](int, const std::vector<const std::vector<int32_t> *> &sources,
               const std::vector<int64_t> &, const TranslationOptions &options,
               const std::vector<std::vector<int32_t>> &)
            -> ErrorOr<std::vector<std::vector<Translation>>> {
          std::unique_lock<std::mutex> lock(mutex);
          ++decoding;
          changed.notify_all();
          changed.wait(lock, [&] { return gateOpen; });
          --decoding;
          if (fail)
            return Status::failure("the decoder failed");
          std::vector<int32_t> firsts;
          int64_t longest = 0;
          std::vector<std::vector<Translation>> out;
          for (const std::vector<int32_t> *s : sources) {
            firsts.push_back(s->front());
            longest = std::max<int64_t>(longest, int64_t(s->size()));
            std::string text;
            for (int32_t id : *s)
              text += std::to_string(id) + " ";
            std::vector<Translation> nbest;
            for (int64_t k = 0; k < options.nbest; ++k)
              nbest.push_back(
                  {text + "#" + std::to_string(k), 0, 0, int64_t(s->size())});
            out.push_back(std::move(nbest));
          }
          batches.push_back(firsts);
          paddedTokens.push_back(longest * int64_t(sources.size()));
          changed.notify_all();
          return out;
        };
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex);
    gateOpen = false;
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gateOpen = true;
    }
    changed.notify_all();
  }
  /// Waits until a decode has started and is held at the gate.
  void waitUntilDecoding() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return decoding > 0; });
  }
};

Batcher::RowsFn rows(int64_t n) {
  return [n](const TranslationOptions &) { return n; };
}

/// A sentence of `length` ids (eos included), all `first`.
std::vector<int32_t> sentence(int32_t first, int64_t length) {
  return std::vector<int32_t>(size_t(length), first);
}

/// A job over `sources`; `ended` is fulfilled with how it ended.
std::shared_ptr<TranslationJob> job(std::vector<std::vector<int32_t>> sources,
                                    std::promise<JobEnd> &ended,
                                    TranslationOptions options = {}) {
  auto j = std::make_shared<TranslationJob>();
  j->sources = std::move(sources);
  j->options = options;
  j->onEnd = [&ended](TranslationJob &done) { ended.set_value(done.end()); };
  return j;
}

BatcherOptions waiting(std::chrono::milliseconds wait, int64_t tokens = 4096) {
  BatcherOptions o;
  o.maxWait = wait;
  o.maxBatchTokens = tokens;
  return o;
}

/// Decodes a first batch of `n` sentences (queued while the worker is held),
/// so that the batcher expects batches of that size.
void warmUp(Batcher &batcher, RecordingDecoder &decoder, int n) {
  decoder.close();
  std::promise<JobEnd> held, batch;
  ASSERT_EQ(batcher.submit(job({sentence(99, 3)}, held)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  std::vector<std::vector<int32_t>> sources;
  for (int i = 0; i < n; ++i)
    sources.push_back(sentence(98, 3));
  auto j = job(sources, batch);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  decoder.open();
  ASSERT_EQ(batch.get_future().get(), JobEnd::Translated);
  std::lock_guard<std::mutex> lock(decoder.mutex);
  decoder.batches.clear();
  decoder.paddedTokens.clear();
}

TEST(Batcher, SentencesOfConcurrentRequestsShareABatchInTheirOrder) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(32), waiting(300ms));
  warmUp(batcher, decoder, 5);
  std::promise<JobEnd> a, b, c;
  auto ja = job({sentence(1, 5), sentence(2, 6), sentence(3, 4)}, a);
  auto jb = job({sentence(4, 5)}, b);
  auto jc = job({sentence(5, 5), {}}, c);
  // A moment apart, as clients send: the wait gathers them.
  for (auto &j : {ja, jb, jc}) {
    ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(a.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(b.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(c.get_future().get(), JobEnd::Translated);
  ASSERT_EQ(decoder.batches.size(), 1u) << "one batch for the three requests";
  EXPECT_EQ(
      std::set<int32_t>(decoder.batches[0].begin(), decoder.batches[0].end()),
      (std::set<int32_t>{1, 2, 3, 4, 5}));
  // Each request's translations in its own order; the blank sentence empty.
  ASSERT_EQ(ja->translations().size(), 3u);
  EXPECT_EQ(ja->translations()[0][0].text, "1 1 1 1 1 #0");
  EXPECT_EQ(ja->translations()[1][0].text, "2 2 2 2 2 2 #0");
  EXPECT_EQ(ja->translations()[2][0].text, "3 3 3 3 #0");
  EXPECT_EQ(jb->translations()[0][0].text, "4 4 4 4 4 #0");
  ASSERT_EQ(jc->translations().size(), 2u);
  EXPECT_EQ(jc->translations()[1].size(), 1u);
  EXPECT_EQ(jc->translations()[1][0].text, "");
}

TEST(Batcher, ABatchKeepsToItsTokenBudgetAndTakesSimilarLengths) {
  RecordingDecoder decoder;
  decoder.close();
  // Budget 40: four sentences of 10, or two of 20; one of 50 alone.
  Batcher batcher(1, decoder.fn(), rows(32), waiting(0ms, 40));
  std::promise<JobEnd> first, mixed;
  // The first job occupies the worker while the next ones queue up.
  ASSERT_EQ(batcher.submit(job({sentence(9, 3)}, first)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  auto j =
      job({sentence(1, 10), sentence(2, 20), sentence(3, 10), sentence(4, 50),
           sentence(5, 20), sentence(6, 10), sentence(7, 10)},
          mixed);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  decoder.open();
  EXPECT_EQ(mixed.get_future().get(), JobEnd::Translated);
  ASSERT_EQ(decoder.batches.size(), 4u);
  // After the lone first: the oldest (1, length 10) with the other 10s,
  // then 2 with 5 (20s), then 4 (50, over the budget) alone.
  EXPECT_EQ(
      std::set<int32_t>(decoder.batches[1].begin(), decoder.batches[1].end()),
      (std::set<int32_t>{1, 3, 6, 7}));
  EXPECT_EQ(
      std::set<int32_t>(decoder.batches[2].begin(), decoder.batches[2].end()),
      (std::set<int32_t>{2, 5}));
  EXPECT_EQ(decoder.batches[3], std::vector<int32_t>{4});
  for (size_t b = 1; b < 3; ++b)
    EXPECT_LE(decoder.paddedTokens[b], 40);
}

TEST(Batcher, ABatchHoldsAtMostTheDecodersRows) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(2), waiting(0ms));
  std::promise<JobEnd> ended;
  auto j = job({sentence(1, 3), sentence(2, 3), sentence(3, 3), sentence(4, 3),
                sentence(5, 3)},
               ended);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  EXPECT_EQ(ended.get_future().get(), JobEnd::Translated);
  for (const auto &batch : decoder.batches)
    EXPECT_LE(batch.size(), 2u);
  EXPECT_EQ(decoder.batches.size(), 3u);
}

TEST(Batcher, WithoutCrossRequestBatchingABatchHoldsOneRequest) {
  RecordingDecoder decoder;
  decoder.close();
  BatcherOptions o = waiting(300ms);
  o.acrossRequests = false;
  Batcher batcher(1, decoder.fn(), rows(32), o);
  std::promise<JobEnd> first, a, b;
  ASSERT_EQ(batcher.submit(job({sentence(9, 3)}, first)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  auto ja = job({sentence(1, 4), sentence(2, 4)}, a);
  auto jb = job({sentence(3, 4)}, b);
  batcher.submit(ja);
  batcher.submit(jb);
  auto start = Clock::now();
  decoder.open();
  EXPECT_EQ(a.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(b.get_future().get(), JobEnd::Translated);
  // Never waits for more sentences.
  EXPECT_LT(Clock::now() - start, 250ms);
  ASSERT_EQ(decoder.batches.size(), 3u);
  EXPECT_EQ(
      std::set<int32_t>(decoder.batches[1].begin(), decoder.batches[1].end()),
      (std::set<int32_t>{1, 2}));
  EXPECT_EQ(decoder.batches[2], std::vector<int32_t>{3});
}

TEST(Batcher, ABatchThatIsNotFullWaitsAtMostTheWait) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(32), waiting(150ms));
  warmUp(batcher, decoder, 3);
  std::promise<JobEnd> ended;
  auto start = Clock::now();
  ASSERT_EQ(batcher.submit(job({sentence(1, 4)}, ended)),
            Batcher::Admission::Queued);
  EXPECT_EQ(ended.get_future().get(), JobEnd::Translated);
  auto took = Clock::now() - start;
  EXPECT_GE(took, 140ms);
  EXPECT_LT(took, 1000ms);
}

TEST(Batcher, ALoneClientIsNotKeptWaiting) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(32), waiting(3000ms));
  // One sentence at a time: no batch ever holds more, none waits.
  for (int i = 0; i < 3; ++i) {
    std::promise<JobEnd> ended;
    auto start = Clock::now();
    ASSERT_EQ(batcher.submit(job({sentence(1, 4)}, ended)),
              Batcher::Admission::Queued);
    EXPECT_EQ(ended.get_future().get(), JobEnd::Translated);
    EXPECT_LT(Clock::now() - start, 1000ms);
  }
}

TEST(Batcher, AFullBatchLeavesWithoutWaiting) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(2), waiting(5000ms));
  std::promise<JobEnd> ended;
  auto start = Clock::now();
  ASSERT_EQ(batcher.submit(job({sentence(1, 4), sentence(2, 4)}, ended)),
            Batcher::Admission::Queued);
  EXPECT_EQ(ended.get_future().get(), JobEnd::Translated);
  EXPECT_LT(Clock::now() - start, 1000ms);
}

TEST(Batcher, AFullQueueRefusesAndLosesNothing) {
  RecordingDecoder decoder;
  decoder.close();
  BatcherOptions o = waiting(0ms);
  o.queueCapacity = 3;
  Batcher batcher(1, decoder.fn(), rows(1), o);
  std::promise<JobEnd> first, queued, refused;
  ASSERT_EQ(batcher.submit(job({sentence(9, 3)}, first)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  auto jq = job({sentence(1, 3), sentence(2, 3)}, queued);
  ASSERT_EQ(batcher.submit(jq), Batcher::Admission::Queued);
  EXPECT_EQ(batcher.queuedSentences(), 2);
  auto jr = job({sentence(3, 3), sentence(4, 3)}, refused);
  EXPECT_EQ(batcher.submit(jr), Batcher::Admission::QueueFull);
  EXPECT_FALSE(jr->ended());
  decoder.open();
  EXPECT_EQ(queued.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(jq->translations()[1][0].text, "2 2 2 #0");
}

TEST(Batcher, ACancelledRequestsQueuedSentencesAreNotDecoded) {
  RecordingDecoder decoder;
  decoder.close();
  Batcher batcher(1, decoder.fn(), rows(1), waiting(0ms));
  std::promise<JobEnd> first, cancelled;
  ASSERT_EQ(batcher.submit(job({sentence(9, 3)}, first)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  auto j = job({sentence(1, 3), sentence(2, 3)}, cancelled);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  j->cancel();
  EXPECT_EQ(cancelled.get_future().get(), JobEnd::Cancelled);
  decoder.open();
  EXPECT_EQ(first.get_future().get(), JobEnd::Translated);
  batcher.stop();
  batcher.join();
  ASSERT_EQ(decoder.batches.size(), 1u);
  EXPECT_EQ(decoder.batches[0], std::vector<int32_t>{9});
}

TEST(Batcher, ADeadlineEndsAJobWhileEveryWorkerIsBusy) {
  RecordingDecoder decoder;
  decoder.close();
  Batcher batcher(1, decoder.fn(), rows(1), waiting(0ms));
  std::promise<JobEnd> first, late;
  ASSERT_EQ(batcher.submit(job({sentence(9, 3)}, first)),
            Batcher::Admission::Queued);
  decoder.waitUntilDecoding();
  auto j = job({sentence(1, 3)}, late);
  j->deadline = Clock::now() + 100ms;
  auto start = Clock::now();
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  std::future<JobEnd> ended = late.get_future();
  ASSERT_EQ(ended.wait_for(3s), std::future_status::ready);
  EXPECT_EQ(ended.get(), JobEnd::TimedOut);
  EXPECT_LT(Clock::now() - start, 2s);
  decoder.open();
  EXPECT_EQ(first.get_future().get(), JobEnd::Translated);
}

TEST(Batcher, ADecodingErrorFailsTheJobsOfTheBatch) {
  RecordingDecoder decoder;
  decoder.fail = true;
  Batcher batcher(1, decoder.fn(), rows(8), waiting(100ms));
  std::promise<JobEnd> a, b;
  auto ja = job({sentence(1, 3)}, a);
  auto jb = job({sentence(2, 3)}, b);
  batcher.submit(ja);
  batcher.submit(jb);
  EXPECT_EQ(a.get_future().get(), JobEnd::Failed);
  EXPECT_EQ(b.get_future().get(), JobEnd::Failed);
  EXPECT_EQ(ja->failure().message(), "the decoder failed");
}

TEST(Batcher, DifferentSearchesNeverShareABatch) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(32), waiting(200ms));
  TranslationOptions greedy;
  greedy.beam = 1;
  std::promise<JobEnd> a, b;
  batcher.submit(job({sentence(1, 3)}, a));
  batcher.submit(job({sentence(2, 3)}, b, greedy));
  EXPECT_EQ(a.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(b.get_future().get(), JobEnd::Translated);
  ASSERT_EQ(decoder.batches.size(), 2u);
}

TEST(Batcher, StopDecodesWhatIsQueuedThenRefuses) {
  RecordingDecoder decoder;
  decoder.close();
  Batcher batcher(2, decoder.fn(), rows(1), waiting(0ms));
  std::promise<JobEnd> ended, after;
  auto j = job({sentence(1, 3), sentence(2, 3), sentence(3, 3)}, ended);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  batcher.stop();
  EXPECT_EQ(batcher.submit(job({sentence(4, 3)}, after)),
            Batcher::Admission::Stopped);
  decoder.open();
  batcher.join();
  EXPECT_EQ(ended.get_future().get(), JobEnd::Translated);
  EXPECT_EQ(decoder.batches.size(), 3u);
}

TEST(Batcher, AJobOfBlankSentencesEndsAtOnce) {
  RecordingDecoder decoder;
  Batcher batcher(1, decoder.fn(), rows(8), waiting(1000ms));
  std::promise<JobEnd> ended;
  TranslationOptions two;
  two.nbest = 2;
  auto j = job({{}, {}}, ended, two);
  ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  std::future<JobEnd> f = ended.get_future();
  ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(f.get(), JobEnd::Translated);
  EXPECT_EQ(j->translations()[1].size(), 2u);
  EXPECT_TRUE(decoder.batches.empty());
}

} // namespace

namespace {

/// In flight: a run that, once `gate` opens, asks for more (room 4) at
/// each of three steps, then ends every sentence, the last-joined first.
/// Records each run's sentences by first id, as they started or joined.
struct InFlightDecoder {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<int32_t>> runs;
  bool gateOpen = false, running = false;

  Batcher::InFlightFn fn() {
    return
        [this](
            int, const Translator::JoiningSources &first,
            const TranslationOptions &options,
            const std::function<Translator::JoiningSources(int64_t)> &more,
            const std::function<void(size_t, std::vector<Translation>)> &done)
            -> Status {
          std::vector<const std::vector<int32_t> *> sources = first.sources;
          {
            std::unique_lock<std::mutex> lock(mutex);
            running = true;
            changed.notify_all();
            changed.wait(lock, [&] { return gateOpen; });
          }
          for (int step = 0; step < 3; ++step) {
            Translator::JoiningSources joined = more(4);
            EXPECT_EQ(joined.numbers.size(), joined.sources.size());
            sources.insert(sources.end(), joined.sources.begin(),
                           joined.sources.end());
          }
          std::vector<int32_t> firsts;
          for (const std::vector<int32_t> *s : sources)
            firsts.push_back(s->front());
          {
            std::lock_guard<std::mutex> lock(mutex);
            runs.push_back(firsts);
          }
          for (size_t i = sources.size(); i-- > 0;) {
            std::string text;
            for (int32_t id : *sources[i])
              text += std::to_string(id) + " ";
            done(i, std::vector<Translation>(
                        size_t(options.nbest),
                        Translation{text, 0, 0, int64_t(sources[i]->size())}));
          }
          return Status::success();
        };
  }
  void waitUntilRunning() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return running; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gateOpen = true;
    }
    changed.notify_all();
  }
};

} // namespace

// Sentences queued while a batch decodes in flight join it, oldest first,
// within the token budget and only when decoded alike; each request gets
// its translations in its own order.
TEST(Batcher, QueuedSentencesJoinABatchInFlight) {
  RecordingDecoder whole;
  InFlightDecoder decoder;
  // Budget 29: five sentences padded to 5 decode together, not six.
  BatcherOptions o = waiting(0ms, 29);
  o.inFlight = true;
  Batcher batcher(1, whole.fn(), rows(32), o, decoder.fn());
  std::promise<JobEnd> a, b, c, d;
  auto ja = job({sentence(1, 5)}, a);
  ASSERT_EQ(batcher.submit(ja), Batcher::Admission::Queued);
  decoder.waitUntilRunning();
  TranslationOptions greedy;
  greedy.beam = 1;
  auto jb = job({sentence(2, 5), sentence(3, 4), sentence(4, 5)}, b);
  auto jc = job({sentence(5, 5)}, c, greedy); // another search: not alike
  auto jd = job({sentence(6, 3), sentence(7, 5)}, d);
  for (auto &j : {jb, jc, jd})
    ASSERT_EQ(batcher.submit(j), Batcher::Admission::Queued);
  decoder.open();
  for (auto *p : {&a, &b, &c, &d})
    EXPECT_EQ(p->get_future().get(), JobEnd::Translated);
  ASSERT_EQ(decoder.runs.size(), 3u);
  // 1 first; 2 3 4 and 6 join (5 x 5 = 25 tokens); 7 would make 6 x 5;
  // 5 waits for a run of its own search.
  EXPECT_EQ(decoder.runs[0], (std::vector<int32_t>{1, 2, 3, 4, 6}));
  EXPECT_EQ(decoder.runs[1], (std::vector<int32_t>{5}));
  EXPECT_EQ(decoder.runs[2], (std::vector<int32_t>{7}));
  EXPECT_TRUE(whole.batches.empty()) << "every batch decoded in flight";
  ASSERT_EQ(jb->translations().size(), 3u);
  EXPECT_EQ(jb->translations()[0][0].text, "2 2 2 2 2 ");
  EXPECT_EQ(jb->translations()[1][0].text, "3 3 3 3 ");
  EXPECT_EQ(jb->translations()[2][0].text, "4 4 4 4 4 ");
  EXPECT_EQ(jd->translations()[0][0].text, "6 6 6 ");
  EXPECT_EQ(jd->translations()[1][0].text, "7 7 7 7 7 ");
}
