//===- ServeFlags.h - The options both servers take -------------*- C++ -*-===//
//
// `loom serve` and `loom-serve` serve the same way, so they declare their
// options once, here (serve/Service.h says what each endpoint does).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_SERVEFLAGS_H
#define LOOM_TOOLS_SERVEFLAGS_H

#include "serve/Server.h"

#include "CLI/CLI.hpp"

#include <string>

namespace loom {

struct ServeFlags {
  serve::ServeOptions serve;
  TranslatorOptions opening;
  std::string apiKeyFile;
  int64_t maxWaitMs = 5;
  bool noBatching = false;
  bool inFlight = false;
};

inline void addServeFlags(CLI::App *cmd, ServeFlags &f) {
  serve::ServeOptions &s = f.serve;
  cmd->add_option("--host", s.http.host,
                  "The address to listen on (127.0.0.1: this machine only)")
      ->capture_default_str();
  cmd->add_option("--port", s.http.port, "The port (0: any free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--workers", f.opening.workers,
                  "Decoders translating batches side by side, sharing one "
                  "copy of the weights, the threads split between them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--threads", f.opening.threads,
                  "CPU threads for decoding (0: one per hardware thread)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--device", f.opening.device,
                  "Where to translate: cpu, or cuda (cuda:N)");
  cmd->add_option("--http-threads", s.http.threads,
                  "Threads reading and answering connections (they wait "
                  "for no translation)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--max-batch-tokens", s.batching.maxBatchTokens,
                  "Padded source tokens (sentences x longest) in one batch")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24))
      ->capture_default_str();
  cmd->add_option("--max-wait-ms", f.maxWaitMs,
                  "How long a batch that is not full waits for more "
                  "sentences")
      ->check(CLI::Range(int64_t(0), int64_t(10000)))
      ->capture_default_str();
  cmd->add_option("--batch", s.translation.batch,
                  "Sentences in one batch, at most")
      ->check(CLI::Range(int64_t(1), int64_t(4096)))
      ->capture_default_str();
  cmd->add_flag("--no-cross-batching", f.noBatching,
                "Batch each request's sentences by themselves (to measure "
                "what batching across requests brings)");
  cmd->add_flag("--in-flight", f.inFlight,
                "Let queued sentences join a batch while it decodes, as "
                "others in it finish, instead of decoding each batch to its "
                "end first");
  cmd->add_option("--queue-size", s.batching.queueCapacity,
                  "Sentences waiting across requests beyond which new "
                  "requests are answered 503")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24))
      ->capture_default_str();
  cmd->add_option("--max-request-chars", s.maxRequestChars,
                  "Bytes of text in one request (more: 413)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30))
      ->capture_default_str();
  cmd->add_option("--max-sentences", s.maxSentences,
                  "Sentences (lines) in one request (more: 413)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", s.timeoutMs,
                  "A request not translated by then is answered 504 (0: no "
                  "deadline)")
      ->check(CLI::Range(int64_t(0), int64_t(86400000)))
      ->capture_default_str();
  cmd->add_option("--api-key-file", f.apiKeyFile,
                  "Require the key on this file's first line on every "
                  "endpoint but /health");
  cmd->add_option("--source-language", s.sourceLanguage,
                  "The source language's code (for /languages and "
                  "LibreTranslate's 'source')");
  cmd->add_option("--target-language", s.targetLanguage,
                  "The target language's code");
  cmd->add_option("--beam", s.translation.beam,
                  "Beam size of requests that do not choose")
      ->check(CLI::Range(int64_t(1), int64_t(64)))
      ->capture_default_str();
  cmd->add_option("--alpha", s.translation.alpha,
                  "Length penalty of requests that do not choose")
      ->capture_default_str();
  cmd->add_option("--max-len-ratio", s.translation.maxLenRatio,
                  "Longest output per source token, for requests that do "
                  "not choose")
      ->capture_default_str();
}

/// What the flags leave to be derived: the wait, batching, the API key and
/// the request body limit. Fails on an unreadable key file.
inline Status finishServeFlags(ServeFlags &f) {
  f.serve.batching.maxWait = std::chrono::milliseconds(f.maxWaitMs);
  f.serve.batching.acrossRequests = !f.noBatching;
  f.serve.batching.inFlight = f.inFlight;
  // A JSON body escapes text to at most 6 bytes a byte (\u00XX), plus its
  // fields.
  f.serve.http.maxBodyBytes = uint64_t(f.serve.maxRequestChars) * 6 + 64 * 1024;
  if (!f.apiKeyFile.empty()) {
    ErrorOr<std::string> key = serve::readApiKeyFile(f.apiKeyFile);
    if (!key)
      return key.status();
    f.serve.apiKey = *key;
  }
  return Status::success();
}

} // namespace loom

#endif // LOOM_TOOLS_SERVEFLAGS_H
