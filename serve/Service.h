//===- Service.h - The endpoints of `loom serve` ----------------*- C++ -*-===//
//
// What the server's URLs mean, over the transport of HttpServer.h and the
// batcher of Batcher.h:
//
//   POST /translate     LibreTranslate's API: {q: text or [texts], source,
//                       target, format: "text", alternatives, api_key} ->
//                       {translatedText, alternatives}; each line of a text
//                       is a sentence, as `loom translate` reads lines
//   POST /v1/translate  {sentences: [...], beam, length_penalty, nbest,
//                       max_length_ratio, return_scores} -> {translations:
//                       [{hypotheses: [{text, score, log_prob}]}]}
//   GET  /languages     LibreTranslate's list of what this model translates
//   GET  /health        live and ready ({live, ready}; 503 until the model
//                       is loaded and once a drain began); /health/live
//                       and /health/ready each alone, for probes
//   GET  /metrics       Prometheus text (Metrics.h)
//   GET  /              a page to try the model (Page.h)
//
// Errors are {"error": "..."} with 400 (malformed JSON, a field of the wrong
// type: the message names the field), 401/403 (no or a wrong API key),
// 404/405, 413 (--max-request-chars, --max-sentences, the body size), 503
// with Retry-After (queue full, model loading, shutting down) and 504 (the
// --timeout-ms deadline passed).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_SERVICE_H
#define LOOM_SERVE_SERVICE_H

#include "serve/Batcher.h"
#include "serve/HttpServer.h"
#include "serve/Metrics.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace loom::serve {

struct ServeOptions {
  HttpServerOptions http;
  BatcherOptions batching;
  /// What a request gets unless it asks otherwise; `batch` bounds the
  /// sentences of one batch.
  TranslationOptions translation;
  /// Bytes of text in one request, and sentences (lines) in one request.
  int64_t maxRequestChars = 100000;
  int64_t maxSentences = 1000;
  /// From the request read to its answer; 0: none.
  int64_t timeoutMs = 60000;
  /// Required on every endpoint but /health when not empty.
  std::string apiKey;
  /// Language codes for /languages and LibreTranslate's source and target;
  /// empty: not named, and any code a client sends is taken.
  std::string sourceLanguage, targetLanguage;
};

class Service {
public:
  explicit Service(ServeOptions options);
  ~Service();

  /// The requests' entry point, for HttpServer::listen.
  Handler handler();
  /// The model is loaded: /health turns ready and the workers start.
  void ready(std::unique_ptr<Translator> translator, double loadSeconds);
  /// A drain began: not ready, new translations refused.
  void draining();
  /// Decodes what is queued and stops the workers.
  void stop();

  Metrics &metrics() { return metricsRegistry; }

private:
  struct Route;
  void handle(const HttpRequest &request, Respond respond,
              const std::shared_ptr<Disconnect> &disconnect);
  /// A translation request, either API: parses, checks, queues, answers
  /// when its job ends.
  void translate(const HttpRequest &request, bool libreTranslate,
                 Respond respond,
                 const std::shared_ptr<Disconnect> &disconnect);
  /// 401 without a key, 403 with a wrong one; none when the key is right
  /// or none is required. `bodyKey`: LibreTranslate's api_key field.
  std::optional<HttpResponse>
  refuseUnauthorized(const HttpRequest &request,
                     const std::string &bodyKey) const;

  ServeOptions options;
  Metrics metricsRegistry;
  std::unique_ptr<Translator> translator;
  std::unique_ptr<Batcher> batcher;
  std::atomic<bool> isReady{false};
  std::atomic<bool> isDraining{false};
};

/// Whether `given` is `expected`, in a time that does not depend on where
/// they differ (an attacker timing answers learns nothing of the key).
bool sameKey(const std::string &given, const std::string &expected);

} // namespace loom::serve

#endif // LOOM_SERVE_SERVICE_H
