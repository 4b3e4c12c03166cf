//===- Metrics.h - What `loom serve` reports at /metrics --------*- C++ -*-===//
//
// Prometheus metrics through prometheus-cpp's core (its registry and text
// format; the HTTP side is the server's own, so /metrics shares its port and
// its API key):
//
//   loom_http_requests_total{endpoint,status}       counter
//   loom_http_request_duration_seconds{endpoint}    histogram
//   loom_batch_sentences, loom_batch_tokens         histograms (per batch;
//                                                   tokens: padded source)
//   loom_batch_decode_seconds                       histogram
//   loom_queue_sentences                            gauge (waiting)
//   loom_busy_workers                               gauge (decoding now)
//   loom_translated_sentences_total,
//   loom_translated_tokens_total                    counters (target tokens)
//   loom_tokens_per_second                          gauge (last 10 s)
//   loom_model_load_seconds, loom_workers           gauges
//
// Endpoints are labelled by route, never by the path a client sent, so a
// scan of random paths cannot grow the series without bound.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_METRICS_H
#define LOOM_SERVE_METRICS_H

#include "serve/Batcher.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace loom::serve {

class Metrics {
public:
  Metrics();

  void requestDone(const std::string &endpoint, int status, double seconds);
  void batchDecoded(const BatchReport &report);
  void modelLoaded(double seconds, int workers);
  /// Read when /metrics is scraped: sentences waiting, workers decoding.
  void setBatcherState(std::function<int64_t()> queued,
                       std::function<int64_t()> decoding);

  /// The text format, for GET /metrics.
  std::string render();

private:
  double tokensPerSecond();

  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Family<prometheus::Counter> &requests;
  prometheus::Family<prometheus::Histogram> &latency;
  prometheus::Histogram &batchSentences;
  prometheus::Histogram &batchTokens;
  prometheus::Histogram &batchSeconds;
  prometheus::Gauge &queueSentences;
  prometheus::Gauge &busyWorkers;
  prometheus::Counter &sentences;
  prometheus::Counter &tokens;
  prometheus::Gauge &tokensRate;
  prometheus::Gauge &loadSeconds;
  prometheus::Gauge &workerCount;

  std::mutex mutex;
  std::function<int64_t()> queueDepth, decodingWorkers;
  /// (when, target tokens) per batch of the last window, for the rate.
  std::deque<std::pair<Clock::time_point, int64_t>> recent;
};

} // namespace loom::serve

#endif // LOOM_SERVE_METRICS_H
