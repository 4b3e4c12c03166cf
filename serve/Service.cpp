//===- Service.cpp - The endpoints of `loom serve` ------------------------===//

#include "serve/Service.h"

#include "api/LongSentences.h"
#include "serve/Page.h"
#include "text/Bleu.h"

#include "nlohmann/json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

namespace loom::serve {

using json = nlohmann::json;

bool sameKey(const std::string &given, const std::string &expected) {
  // Every byte of the expected key is compared whatever the given one is;
  // only the expected key's length shows in the time.
  unsigned char differ = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? (unsigned char)given[i] : 0;
    differ |= (unsigned char)(g ^ (unsigned char)expected[i]);
  }
  return differ == 0;
}

namespace {

HttpResponse jsonResponse(int status, const json &body) {
  HttpResponse r;
  r.status = status;
  // Text from the tokenizer is valid UTF-8; replacing rather than throwing
  // keeps a bad byte from ever costing the answer.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

HttpResponse errorResponse(int status, const std::string &message) {
  return jsonResponse(status, json{{"error", message}});
}

HttpResponse busy(const std::string &message) {
  HttpResponse r = errorResponse(503, message);
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

/// A request refused before it reaches the batcher.
struct Refusal {
  int status;
  std::string message;
};

/// %XX and '+' decoded, as forms are sent.
std::string percentDecode(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() &&
               std::isxdigit((unsigned char)s[i + 1]) &&
               std::isxdigit((unsigned char)s[i + 2])) {
      out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// name=value&... as a JSON object; a repeated name becomes a list.
json parseForm(const std::string &body) {
  json form = json::object();
  size_t at = 0;
  while (at <= body.size()) {
    size_t end = body.find('&', at);
    if (end == std::string::npos)
      end = body.size();
    std::string pair = body.substr(at, end - at);
    at = end + 1;
    if (pair.empty())
      continue;
    size_t eq = pair.find('=');
    std::string name = percentDecode(pair.substr(0, eq));
    std::string value =
        eq == std::string::npos ? "" : percentDecode(pair.substr(eq + 1));
    if (!form.contains(name)) {
      form[name] = value;
    } else {
      if (!form[name].is_array())
        form[name] = json::array({form[name]});
      form[name].push_back(value);
    }
  }
  return form;
}

/// The value of `name` in the query string.
std::string queryValue(const std::string &query, const std::string &name) {
  json form = parseForm(query);
  return form.contains(name) && form[name].is_string()
             ? form[name].get<std::string>()
             : std::string();
}

/// A form's numbers arrive as text.
bool numberFromForm(json &value) {
  if (!value.is_string())
    return true;
  const std::string &s = value.get_ref<const std::string &>();
  try {
    size_t used = 0;
    if (s.find_first_of(".eE") == std::string::npos) {
      long long n = std::stoll(s, &used);
      value = n;
    } else {
      double d = std::stod(s, &used);
      value = d;
    }
    return used == s.size();
  } catch (...) {
    return false;
  }
}

/// Whether the body is declared a form (LibreTranslate's clients send
/// forms or JSON).
bool isForm(const HttpRequest &request) {
  return request.header("content-type")
             .rfind("application/x-www-form-urlencoded", 0) == 0;
}

/// The request body as a JSON object, parsed as a form when `form`, else
/// as JSON whatever its declared type (curl -d declares a form).
ErrorOr<json> parseBody(const HttpRequest &request, bool form) {
  json body;
  if (form) {
    body = parseForm(request.body);
  } else {
    body = json::parse(request.body, nullptr, false);
    if (body.is_discarded())
      return Status::failure("malformed JSON in the request body");
  }
  if (!body.is_object())
    return Status::failure("the request body must be a JSON object");
  return body;
}

std::string typeName(const json &value) { return value.type_name(); }

/// Reads optional field `name` of `body` into `out` as an integer.
std::optional<Refusal> readInteger(json &body, const char *name, int64_t &out,
                                   bool fromForm) {
  if (!body.contains(name) || body[name].is_null())
    return std::nullopt;
  json &value = body[name];
  if (fromForm && !numberFromForm(value))
    return Refusal{400, std::string(name) + " must be an integer"};
  if (!value.is_number_integer())
    return Refusal{400, std::string(name) + " must be an integer, not " +
                            typeName(value)};
  out = value.get<int64_t>();
  return std::nullopt;
}

std::optional<Refusal> readNumber(json &body, const char *name, double &out) {
  if (!body.contains(name) || body[name].is_null())
    return std::nullopt;
  const json &value = body[name];
  if (!value.is_number())
    return Refusal{400, std::string(name) + " must be a number, not " +
                            typeName(value)};
  out = value.get<double>();
  if (!std::isfinite(out))
    return Refusal{400, std::string(name) + " must be finite"};
  return std::nullopt;
}

/// The lines of a text as `loom translate` reads a file: split at '\n',
/// a trailing '\r' dropped.
std::vector<std::string> linesOf(const std::string &text) {
  std::vector<std::string> lines;
  size_t at = 0;
  for (;;) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(
        at, end == std::string::npos ? std::string::npos : end - at);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back(std::move(line));
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return lines;
}

/// What one translation request asks, either API.
struct Parsed {
  /// Per text of the request, its sentences' places in `sentences`.
  std::vector<std::vector<size_t>> texts;
  std::vector<std::string> sentences;
  /// /v1/translate's target_prefix: none, or one per sentence.
  std::vector<std::string> prefixes;
  bool list = false; // LibreTranslate's q was a list
  int64_t alternatives = 0;
  TranslationOptions options;
  std::string apiKey; // LibreTranslate's api_key field
};

std::optional<Refusal> parseLibreTranslate(json &body, bool fromForm,
                                           const ServeOptions &serve,
                                           Parsed &p) {
  if (!body.contains("q"))
    return Refusal{400, "Invalid request: missing q parameter"};
  json &q = body["q"];
  std::vector<std::string> texts;
  if (q.is_string()) {
    texts.push_back(q.get<std::string>());
  } else if (q.is_array()) {
    p.list = true;
    for (size_t i = 0; i < q.size(); ++i) {
      if (!q[i].is_string())
        return Refusal{400, "q[" + std::to_string(i) +
                                "] must be a string, not " + typeName(q[i])};
      texts.push_back(q[i].get<std::string>());
    }
  } else {
    return Refusal{400, "q must be a string or a list of strings, not " +
                            typeName(q)};
  }
  for (const char *name : {"source", "target", "format", "api_key"})
    if (body.contains(name) && !body[name].is_string() && !body[name].is_null())
      return Refusal{400, std::string(name) + " must be a string, not " +
                              typeName(body[name])};
  auto text = [&](const char *name) {
    return body.contains(name) && body[name].is_string()
               ? body[name].get<std::string>()
               : std::string();
  };
  std::string format = text("format");
  if (!format.empty() && format != "text")
    return Refusal{400, "format '" + format +
                            "' is not supported; this server translates "
                            "format \"text\""};
  std::string source = text("source"), target = text("target");
  if (!serve.sourceLanguage.empty() && !source.empty() && source != "auto" &&
      source != serve.sourceLanguage)
    return Refusal{400, "source '" + source + "' is not translated here: " +
                            "this model translates " + serve.sourceLanguage +
                            " to " + serve.targetLanguage};
  if (!serve.targetLanguage.empty() && !target.empty() &&
      target != serve.targetLanguage)
    return Refusal{400, "target '" + target + "' is not translated here: " +
                            "this model translates " + serve.sourceLanguage +
                            " to " + serve.targetLanguage};
  p.apiKey = text("api_key");
  if (auto refused =
          readInteger(body, "alternatives", p.alternatives, fromForm))
    return refused;
  if (p.alternatives < 0 || p.alternatives > 32)
    return Refusal{400, "alternatives must be between 0 and 32"};
  p.options = serve.translation;
  p.options.nbest = p.alternatives + 1;
  p.options.beam = std::max(p.options.beam, p.options.nbest);
  p.options.scores = p.options.beam > 1 || p.options.nbest > 1;
  // Its clients send paragraphs, and cannot ask for a long line to be
  // translated in parts: it is.
  p.options.splitLong = true;
  for (const std::string &t : texts) {
    std::vector<size_t> places;
    for (std::string &line : linesOf(t)) {
      places.push_back(p.sentences.size());
      p.sentences.push_back(std::move(line));
    }
    p.texts.push_back(std::move(places));
  }
  return std::nullopt;
}

std::optional<Refusal> parseOwn(json &body, const ServeOptions &serve,
                                Parsed &p) {
  static const char *known[] = {"sentences",
                                "beam",
                                "length_penalty",
                                "nbest",
                                "max_length_ratio",
                                "return_scores",
                                "split_long",
                                "min_length",
                                "max_length",
                                "repetition_penalty",
                                "no_repeat_ngram_size",
                                "forbidden",
                                "target_prefix",
                                "length_penalty_form",
                                "sampling_topk",
                                "sampling_topp",
                                "sampling_temperature",
                                "seed",
                                "return_alignments",
                                "alignment_layer"};
  for (auto it = body.begin(); it != body.end(); ++it)
    if (std::find_if(std::begin(known), std::end(known), [&](const char *k) {
          return it.key() == k;
        }) == std::end(known)) {
      std::string names;
      for (const char *k : known)
        names += (names.empty() ? "" : ", ") + std::string(k);
      return Refusal{400,
                     "unknown field '" + it.key() + "' (known: " + names + ")"};
    }
  if (!body.contains("sentences"))
    return Refusal{400, "missing field 'sentences' (a list of strings)"};
  const json &sentences = body["sentences"];
  if (!sentences.is_array())
    return Refusal{400, "sentences must be a list of strings, not " +
                            typeName(sentences)};
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::string where = "sentences[" + std::to_string(i) + "]";
    if (!sentences[i].is_string())
      return Refusal{400, where + " must be a string, not " +
                              typeName(sentences[i])};
    std::string s = sentences[i].get<std::string>();
    if (!s.empty() && s.back() == '\r')
      s.pop_back();
    if (s.find('\n') != std::string::npos)
      return Refusal{400, where + " holds a line break; send one sentence "
                                  "per entry"};
    p.texts.push_back({p.sentences.size()});
    p.sentences.push_back(std::move(s));
  }
  p.options = serve.translation;
  if (auto refused = readInteger(body, "beam", p.options.beam, false))
    return refused;
  if (auto refused = readInteger(body, "nbest", p.options.nbest, false))
    return refused;
  if (auto refused = readNumber(body, "length_penalty", p.options.alpha))
    return refused;
  if (auto refused =
          readNumber(body, "max_length_ratio", p.options.maxLenRatio))
    return refused;
  p.options.scores = false;
  if (body.contains("return_scores")) {
    if (!body["return_scores"].is_boolean())
      return Refusal{400, "return_scores must be true or false, not " +
                              typeName(body["return_scores"])};
    p.options.scores = body["return_scores"].get<bool>();
  }
  if (body.contains("return_alignments")) {
    if (!body["return_alignments"].is_boolean())
      return Refusal{400, "return_alignments must be true or false, not " +
                              typeName(body["return_alignments"])};
    p.options.alignments = body["return_alignments"].get<bool>();
  }
  if (auto refused =
          readInteger(body, "alignment_layer", p.options.alignmentLayer, false))
    return refused;
  if (auto refused =
          readInteger(body, "min_length", p.options.minLength, false))
    return refused;
  if (auto refused =
          readInteger(body, "max_length", p.options.maxLength, false))
    return refused;
  if (auto refused =
          readNumber(body, "repetition_penalty", p.options.repetitionPenalty))
    return refused;
  if (auto refused = readInteger(body, "no_repeat_ngram_size",
                                 p.options.noRepeatNgram, false))
    return refused;
  if (body.contains("forbidden")) {
    const json &forbidden = body["forbidden"];
    if (!forbidden.is_array())
      return Refusal{400, "forbidden must be a list of strings, not " +
                              typeName(forbidden)};
    for (size_t i = 0; i < forbidden.size(); ++i) {
      if (!forbidden[i].is_string())
        return Refusal{400, "forbidden[" + std::to_string(i) +
                                "] must be a string, not " +
                                typeName(forbidden[i])};
      p.options.forbidden.push_back(forbidden[i].get<std::string>());
    }
  }
  if (auto refused =
          readInteger(body, "sampling_topk", p.options.samplingTopK, false))
    return refused;
  if (auto refused = readNumber(body, "sampling_topp", p.options.samplingTopP))
    return refused;
  if (auto refused = readNumber(body, "sampling_temperature",
                                p.options.samplingTemperature))
    return refused;
  int64_t seed = 0;
  if (auto refused = readInteger(body, "seed", seed, false))
    return refused;
  if (seed < 0)
    return Refusal{400, "seed must not be negative"};
  p.options.seed = uint64_t(seed);
  if (body.contains("length_penalty_form")) {
    const json &form = body["length_penalty_form"];
    if (!form.is_string() || (form.get<std::string>() != "gnmt" &&
                              form.get<std::string>() != "power"))
      return Refusal{400, "length_penalty_form must be \"gnmt\" or \"power\""};
    p.options.powerLengthPenalty = form.get<std::string>() == "power";
  }
  if (body.contains("target_prefix")) {
    const json &prefixes = body["target_prefix"];
    if (!prefixes.is_array() || prefixes.size() != p.sentences.size())
      return Refusal{400, "target_prefix must be a list of strings, one per "
                          "sentence (\"\" for none)"};
    for (size_t i = 0; i < prefixes.size(); ++i) {
      if (!prefixes[i].is_string())
        return Refusal{400, "target_prefix[" + std::to_string(i) +
                                "] must be a string, not " +
                                typeName(prefixes[i])};
      p.prefixes.push_back(prefixes[i].get<std::string>());
    }
  }
  if (p.options.minLength < 0)
    return Refusal{400, "min_length must not be negative"};
  if (p.options.maxLength < 0)
    return Refusal{400, "max_length must not be negative"};
  if (!(p.options.repetitionPenalty > 0))
    return Refusal{400, "repetition_penalty must be above 0 (1: none)"};
  if (p.options.noRepeatNgram < 0)
    return Refusal{400, "no_repeat_ngram_size must not be negative"};
  if (body.contains("split_long")) {
    if (!body["split_long"].is_boolean())
      return Refusal{400, "split_long must be true or false, not " +
                              typeName(body["split_long"])};
    p.options.splitLong = body["split_long"].get<bool>();
  }
  if (p.options.beam < 1)
    return Refusal{400, "beam must be at least 1"};
  if (p.options.nbest < 1 || p.options.nbest > p.options.beam)
    return Refusal{400, "nbest must be between 1 and beam (" +
                            std::to_string(p.options.beam) + ")"};
  if (p.options.alpha < 0)
    return Refusal{400, "length_penalty must not be negative"};
  if (!(p.options.maxLenRatio > 0))
    return Refusal{400, "max_length_ratio must be positive"};
  return std::nullopt;
}

/// The endpoint label of metrics: a route, never the path as sent.
std::string endpointOf(const std::string &path) {
  for (const char *route :
       {"/", "/translate", "/v1/translate", "/languages", "/health",
        "/health/live", "/health/ready", "/metrics"})
    if (path == route)
      return route;
  return "other";
}

} // namespace

Service::Service(ServeOptions o) : options(std::move(o)) {}

Service::~Service() { stop(); }

void Service::ready(std::unique_ptr<Translator> loaded, double loadSeconds) {
  translator = std::move(loaded);
  Translator *t = translator.get();
  batcher = std::make_unique<Batcher>(
      t->workers(),
      [t](int worker, const std::vector<const std::vector<int32_t> *> &sources,
          const std::vector<int64_t> &numbers,
          const TranslationOptions &options,
          const std::vector<std::vector<int32_t>> &prefixes) {
        return t->decodeBatch(worker, sources, numbers, options, prefixes);
      },
      [t](const TranslationOptions &options) {
        return t->maxBatchSentences(options);
      },
      options.batching,
      // An executable compiled before per-sentence starts decodes whole
      // batches only.
      t->decodesInFlight()
          ? Batcher::InFlightFn(
                [t](int worker, const Translator::JoiningSources &first,
                    const TranslationOptions &o,
                    const std::function<Translator::JoiningSources(int64_t)>
                        &more,
                    const std::function<void(size_t, std::vector<Translation>)>
                        &done) {
                  return t->decodeInFlight(worker, first, o, more, done);
                })
          : nullptr);
  batcher->setReportFn([this](const BatchReport &report) {
    metricsRegistry.batchDecoded(report);
  });
  Batcher *b = batcher.get();
  metricsRegistry.setBatcherState([b] { return b->queuedSentences(); },
                                  [b] { return b->decodingWorkers(); });
  metricsRegistry.modelLoaded(loadSeconds, t->workers());
  isReady = true;
}

void Service::draining() { isDraining = true; }

void Service::stop() {
  isDraining = true;
  if (batcher) {
    batcher->stop();
    batcher->join();
  }
}

Handler Service::handler() {
  return [this](const HttpRequest &request, Respond respond,
                const std::shared_ptr<Disconnect> &disconnect) {
    handle(request, std::move(respond), disconnect);
  };
}

std::optional<HttpResponse>
Service::refuseUnauthorized(const HttpRequest &request,
                            const std::string &bodyKey) const {
  if (options.apiKey.empty())
    return std::nullopt;
  std::string given = request.header("x-api-key");
  std::string bearer = request.header("authorization");
  if (given.empty() && bearer.rfind("Bearer ", 0) == 0)
    given = bearer.substr(7);
  if (given.empty())
    given = queryValue(request.query, "api_key");
  if (given.empty())
    given = bodyKey;
  if (given.empty())
    return errorResponse(401, "this server requires an API key: send it as "
                              "'X-API-Key: KEY', 'Authorization: Bearer "
                              "KEY' or ?api_key=KEY");
  if (!sameKey(given, options.apiKey))
    return errorResponse(403, "Invalid API key");
  return std::nullopt;
}

void Service::handle(const HttpRequest &request, Respond respond,
                     const std::shared_ptr<Disconnect> &disconnect) {
  Clock::time_point start = Clock::now();
  std::string endpoint = endpointOf(request.path);
  // Every answer is counted and timed, whichever path gives it.
  Respond counted = [this, start, endpoint,
                     respond = std::move(respond)](HttpResponse r) {
    metricsRegistry.requestDone(
        endpoint, r.status,
        std::chrono::duration<double>(Clock::now() - start).count());
    respond(std::move(r));
  };
  const std::string &path = request.path;
  bool get = request.method == "GET" || request.method == "HEAD";
  bool post = request.method == "POST";
  auto wrongMethod = [&](const char *allowed) {
    HttpResponse r =
        errorResponse(405, request.method + " " + path + ": use " + allowed);
    r.headers.emplace_back("Allow", allowed);
    counted(std::move(r));
  };

  if (path == "/health" || path == "/health/live" || path == "/health/ready") {
    if (!get)
      return wrongMethod("GET");
    bool ready = isReady && !isDraining;
    json body{{"live", true},
              {"ready", ready},
              {"status", isDraining ? "draining"
                         : isReady  ? "ready"
                                    : "loading"}};
    int status = path == "/health/live" ? 200 : ready ? 200 : 503;
    return counted(jsonResponse(status, body));
  }

  bool translation = path == "/translate" || path == "/v1/translate";
  bool known =
      translation || path == "/" || path == "/languages" || path == "/metrics";
  if (!known)
    return counted(
        errorResponse(404, "no endpoint " + request.method + " " + path));
  if (translation && !post)
    return wrongMethod("POST");
  if (!translation && !get)
    return wrongMethod("GET");
  // /translate may carry its key in the body (LibreTranslate's api_key):
  // checked once the body is read.
  if (path != "/translate")
    if (std::optional<HttpResponse> refused = refuseUnauthorized(request, ""))
      return counted(std::move(*refused));
  if (path == "/") {
    HttpResponse r;
    r.contentType = "text/html; charset=utf-8";
    r.body = pageHtml();
    return counted(std::move(r));
  }
  if (path == "/metrics") {
    HttpResponse r;
    r.contentType = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metricsRegistry.render();
    return counted(std::move(r));
  }
  if (path == "/languages") {
    std::string source =
        options.sourceLanguage.empty() ? "src" : options.sourceLanguage;
    std::string target =
        options.targetLanguage.empty() ? "tgt" : options.targetLanguage;
    json languages = json::array(
        {{{"code", source}, {"name", source}, {"targets", {target}}}});
    return counted(jsonResponse(200, languages));
  }
  translate(request, path == "/translate", std::move(counted), disconnect);
}

void Service::translate(const HttpRequest &request, bool libreTranslate,
                        Respond respond,
                        const std::shared_ptr<Disconnect> &disconnect) {
  bool fromForm = libreTranslate && isForm(request);
  ErrorOr<json> body = parseBody(request, fromForm);
  if (!body) {
    // Nothing about the request is said to a client without the key.
    if (std::optional<HttpResponse> unauthorized =
            refuseUnauthorized(request, ""))
      return respond(std::move(*unauthorized));
    return respond(errorResponse(400, body.status().message()));
  }
  Parsed p;
  std::optional<Refusal> refused =
      libreTranslate ? parseLibreTranslate(*body, fromForm, options, p)
                     : parseOwn(*body, options, p);
  // The key is checked before anything about the request is said.
  if (std::optional<HttpResponse> unauthorized =
          refuseUnauthorized(request, p.apiKey))
    return respond(std::move(*unauthorized));
  if (refused)
    return respond(errorResponse(refused->status, refused->message));
  if (int64_t(p.sentences.size()) > options.maxSentences)
    return respond(errorResponse(
        413, "the request has " + std::to_string(p.sentences.size()) +
                 " sentences; this server takes at most " +
                 std::to_string(options.maxSentences) + " per request"));
  if (int64_t(p.sentences.size()) > options.batching.queueCapacity)
    return respond(errorResponse(
        413, "the request has " + std::to_string(p.sentences.size()) +
                 " sentences, more than the server's queue holds (" +
                 std::to_string(options.batching.queueCapacity) + ")"));
  int64_t chars = 0;
  for (const std::string &s : p.sentences)
    chars += int64_t(s.size());
  if (chars > options.maxRequestChars)
    return respond(errorResponse(
        413, "the request has " + std::to_string(chars) +
                 " bytes of text; this server takes at most " +
                 std::to_string(options.maxRequestChars) + " per request"));
  if (isDraining) {
    HttpResponse r = busy("the server is shutting down");
    r.headers.emplace_back("Connection", "close");
    return respond(std::move(r));
  }
  if (!isReady)
    return respond(busy("the model is loading"));
  Status usable = translator->checkOptions(p.options);
  if (!usable.ok())
    return respond(errorResponse(400, usable.message()));

  auto job = std::make_shared<TranslationJob>();
  job->options = p.options;
  // A sentence too long for the model and split is several sources of the
  // job, joined again below; a blank one is one empty source.
  auto partCounts = std::make_shared<std::vector<size_t>>();
  for (size_t i = 0; i < p.sentences.size(); ++i) {
    ErrorOr<std::vector<std::vector<int32_t>>> parts = translator->encodeParts(
        p.sentences[i], int64_t(i) + 1, p.options.splitLong);
    if (!parts)
      return respond(errorResponse(400, parts.status().message()));
    if (parts->empty())
      parts->emplace_back();
    partCounts->push_back(parts->size());
    // A prefix starts the first part of its sentence.
    std::vector<int32_t> prefix;
    if (!p.prefixes.empty()) {
      ErrorOr<std::vector<int32_t>> ids =
          translator->encodePrefix(p.prefixes[i], int64_t(i) + 1);
      if (!ids)
        return respond(errorResponse(400, ids.status().message()));
      prefix = std::move(*ids);
    }
    for (size_t part = 0; part < parts->size(); ++part) {
      job->sources.push_back(std::move((*parts)[part]));
      if (!p.prefixes.empty())
        job->prefixes.push_back(part == 0 ? prefix : std::vector<int32_t>{});
    }
  }
  if (options.timeoutMs > 0)
    job->deadline = Clock::now() + std::chrono::milliseconds(options.timeoutMs);
  auto parsed = std::make_shared<Parsed>(std::move(p));
  job->onEnd = [respond, parsed, partCounts,
                libreTranslate](TranslationJob &ended) {
    switch (ended.end()) {
    case JobEnd::Cancelled:
      return respond(errorResponse(499, "the client closed the connection"));
    case JobEnd::TimedOut:
      return respond(errorResponse(504, "the translation took longer than "
                                        "the server's deadline"));
    case JobEnd::Failed:
      return respond(errorResponse(500, ended.failure().message()));
    case JobEnd::Translated:
      break;
    }
    // Per sentence, its parts' translations joined.
    std::vector<std::vector<Translation>> found =
        joinSentences(ended.translations(), *partCounts);
    if (!libreTranslate) {
      json translations = json::array();
      for (const std::vector<Translation> &hyps : found) {
        json list = json::array();
        for (const Translation &t : hyps) {
          json h{{"text", t.text}};
          if (parsed->options.scores) {
            h["score"] = t.score;
            h["log_prob"] = t.logProb;
          }
          if (parsed->options.alignments) {
            json pairs = json::array();
            for (auto [source, target] : t.alignment)
              pairs.push_back(json::array({source, target}));
            h["alignment"] = std::move(pairs);
          }
          list.push_back(std::move(h));
        }
        translations.push_back(json{{"hypotheses", std::move(list)}});
      }
      json body{{"translations", std::move(translations)}};
      return respond(jsonResponse(200, body));
    }
    // LibreTranslate: a text's lines joined again; alternative k of a text
    // is the k-th hypothesis of each of its lines.
    auto joined = [&](const std::vector<size_t> &places, size_t k) {
      std::string out;
      for (size_t i = 0; i < places.size(); ++i) {
        const std::vector<Translation> &hyps = found[places[i]];
        if (i)
          out += '\n';
        if (k < hyps.size())
          out += hyps[k].text;
      }
      return out;
    };
    json texts = json::array(), alternatives = json::array();
    for (const std::vector<size_t> &places : parsed->texts) {
      texts.push_back(joined(places, 0));
      json alts = json::array();
      for (int64_t k = 1; k <= parsed->alternatives; ++k)
        alts.push_back(joined(places, size_t(k)));
      alternatives.push_back(std::move(alts));
    }
    json body;
    body["translatedText"] = parsed->list ? texts : texts[0];
    if (parsed->alternatives > 0)
      body["alternatives"] = parsed->list ? alternatives : alternatives[0];
    respond(jsonResponse(200, body));
  };
  switch (batcher->submit(job)) {
  case Batcher::Admission::Queued:
    break;
  case Batcher::Admission::QueueFull:
    return respond(busy("the server is busy: its queue is full"));
  case Batcher::Admission::Stopped:
    return respond(busy("the server is shutting down"));
  }
  std::weak_ptr<TranslationJob> weak = job;
  disconnect->onDisconnect([weak] {
    if (auto gone = weak.lock())
      gone->cancel();
  });
}

} // namespace loom::serve
