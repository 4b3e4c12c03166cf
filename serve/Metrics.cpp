//===- Metrics.cpp - What `loom serve` reports at /metrics ----------------===//

#include "serve/Metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace loom::serve {

namespace {

constexpr std::chrono::seconds kRateWindow(10);

prometheus::Histogram::BucketBoundaries latencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,  0.5,    1,     2.5,  5,     10,   30};
}

prometheus::Histogram::BucketBoundaries powersOfTwo(double top) {
  prometheus::Histogram::BucketBoundaries b;
  for (double x = 1; x <= top; x *= 2)
    b.push_back(x);
  return b;
}

} // namespace

Metrics::Metrics()
    : registry(std::make_shared<prometheus::Registry>()),
      requests(prometheus::BuildCounter()
                   .Name("loom_http_requests_total")
                   .Help("HTTP requests answered, by endpoint and status")
                   .Register(*registry)),
      latency(prometheus::BuildHistogram()
                  .Name("loom_http_request_duration_seconds")
                  .Help("From the request read to its answer sent, by "
                        "endpoint")
                  .Register(*registry)),
      batchSentences(
          prometheus::BuildHistogram()
              .Name("loom_batch_sentences")
              .Help("Sentences per decoded batch (in flight: the most "
                    "decoding together between two joins)")
              .Register(*registry)
              .Add({}, powersOfTwo(512))),
      batchTokens(prometheus::BuildHistogram()
                      .Name("loom_batch_tokens")
                      .Help("Padded source tokens per decoded batch "
                            "(sentences x longest)")
                      .Register(*registry)
                      .Add({}, powersOfTwo(65536))),
      batchSeconds(prometheus::BuildHistogram()
                       .Name("loom_batch_decode_seconds")
                       .Help("Seconds a worker took to decode a batch")
                       .Register(*registry)
                       .Add({}, latencyBuckets())),
      queueSentences(prometheus::BuildGauge()
                         .Name("loom_queue_sentences")
                         .Help("Sentences waiting to be batched")
                         .Register(*registry)
                         .Add({})),
      busyWorkers(prometheus::BuildGauge()
                      .Name("loom_busy_workers")
                      .Help("Workers decoding a batch now (of loom_workers)")
                      .Register(*registry)
                      .Add({})),
      sentences(prometheus::BuildCounter()
                    .Name("loom_translated_sentences_total")
                    .Help("Sentences decoded")
                    .Register(*registry)
                    .Add({})),
      tokens(prometheus::BuildCounter()
                 .Name("loom_translated_tokens_total")
                 .Help("Target tokens of the best translations decoded")
                 .Register(*registry)
                 .Add({})),
      tokensRate(prometheus::BuildGauge()
                     .Name("loom_tokens_per_second")
                     .Help("Target tokens decoded per second over the last "
                           "10 seconds")
                     .Register(*registry)
                     .Add({})),
      loadSeconds(prometheus::BuildGauge()
                      .Name("loom_model_load_seconds")
                      .Help("Seconds the model took to load (and compile, "
                            "for a model directory)")
                      .Register(*registry)
                      .Add({})),
      workerCount(prometheus::BuildGauge()
                      .Name("loom_workers")
                      .Help("Decoders translating batches side by side")
                      .Register(*registry)
                      .Add({})) {}

void Metrics::requestDone(const std::string &endpoint, int status,
                          double seconds) {
  requests.Add({{"endpoint", endpoint}, {"status", std::to_string(status)}})
      .Increment();
  latency.Add({{"endpoint", endpoint}}, latencyBuckets()).Observe(seconds);
}

void Metrics::batchDecoded(const BatchReport &report) {
  if (report.sentences > 0) {
    batchSentences.Observe(double(report.sentences));
    batchTokens.Observe(double(report.paddedTokens));
    batchSeconds.Observe(report.seconds);
  }
  sentences.Increment(double(report.translated));
  tokens.Increment(double(report.targetTokens));
  std::lock_guard<std::mutex> lock(mutex);
  recent.emplace_back(Clock::now(), report.targetTokens);
}

void Metrics::modelLoaded(double seconds, int workers) {
  loadSeconds.Set(seconds);
  workerCount.Set(workers);
}

void Metrics::setBatcherState(std::function<int64_t()> queued,
                              std::function<int64_t()> decoding) {
  std::lock_guard<std::mutex> lock(mutex);
  queueDepth = std::move(queued);
  decodingWorkers = std::move(decoding);
}

double Metrics::tokensPerSecond() {
  Clock::time_point now = Clock::now();
  while (!recent.empty() && now - recent.front().first > kRateWindow)
    recent.pop_front();
  int64_t sum = 0;
  for (const auto &[when, count] : recent)
    sum += count;
  return double(sum) / double(kRateWindow.count());
}

std::string Metrics::render() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    queueSentences.Set(queueDepth ? double(queueDepth()) : 0.0);
    busyWorkers.Set(decodingWorkers ? double(decodingWorkers()) : 0.0);
    tokensRate.Set(tokensPerSecond());
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry->Collect());
  return out.str();
}

} // namespace loom::serve
