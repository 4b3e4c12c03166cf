//===- HttpServer.h - HTTP/1.1 connections for `loom serve` -----*- C++ -*-===//
//
// The transport, apart from what the endpoints mean (Api.h): HTTP/1.1 with
// keep-alive over Boost.Beast on asio, a few threads for any number of
// connections. A handler answers when it likes, from any thread: a request
// waiting for the batcher holds no thread. While a request waits, its
// connection is watched, and a client that hangs up fires the request's
// disconnect callback (the server cancels its sentences not yet decoded).
//
// Beast rather than cpp-httplib: httplib (0.11 in Debian 12) gives each
// connection a thread of its pool for the connection's life, fixes the
// listen backlog at 5 inside its library, and tells a handler nothing of its
// socket, so a request could neither wait without a thread nor learn that
// its client left. Beast is asio's own HTTP parser and serializer, with
// limits on header and body sizes, and leaves the connections to us.
//
// drain() is the graceful stop: the listening socket closes, idle
// connections close, requests already read are answered (with
// `Connection: close`), and run() returns once no connection is left.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_HTTPSERVER_H
#define LOOM_SERVE_HTTPSERVER_H

#include "abi/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace loom::serve {

struct HttpRequest {
  std::string method; // "GET", "POST", ...
  std::string path;   // the target without its query
  std::string query;  // after '?', undecoded
  /// Header names in lower case.
  std::map<std::string, std::string> headers;
  std::string body;

  /// The header's value, or "" when absent.
  std::string header(const std::string &lowerName) const;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Set by a handler whose answer waits: called (once, from a server thread)
/// if the client hangs up before the answer is written.
class Disconnect {
public:
  /// `callback` runs on fire(), or at once if it already fired.
  void onDisconnect(std::function<void()> callback);
  /// Called by the connection.
  void fire();

private:
  std::mutex mutex;
  std::function<void()> callback;
  bool fired = false;
};

/// Sends the answer; call once, from any thread.
using Respond = std::function<void(HttpResponse)>;
using Handler = std::function<void(const HttpRequest &, Respond,
                                   const std::shared_ptr<Disconnect> &)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080; // 0: any free port (port() says which)
  int threads = 2;
  /// Larger bodies are answered 413 without being read.
  uint64_t maxBodyBytes = 1 << 20;
  /// An idle keep-alive connection, or a request arriving this slowly, is
  /// closed after it.
  int idleSeconds = 30;
};

class HttpServer {
public:
  /// Binds and listens; fails with the reason (port in use, bad address).
  static ErrorOr<std::unique_ptr<HttpServer>> listen(HttpServerOptions options,
                                                     Handler handler);
  ~HttpServer();

  /// The port bound (the one chosen, when asked for 0).
  int port() const;
  /// Serves on the option's threads until drain() has finished; returns
  /// then.
  void run();
  /// The graceful stop (above); from any thread.
  void drain();
  /// Called once when a drain begins.
  void setOnDrain(std::function<void()> callback);

  struct Impl;

private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The status line's words for `status` ("Not Found").
const char *statusReason(int status);

} // namespace loom::serve

#endif // LOOM_SERVE_HTTPSERVER_H
