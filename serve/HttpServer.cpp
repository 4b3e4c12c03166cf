//===- HttpServer.cpp - HTTP/1.1 connections for `loom serve` -------------===//

#include "serve/HttpServer.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>
#include <unordered_map>

namespace loom::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string HttpRequest::header(const std::string &lowerName) const {
  auto it = headers.find(lowerName);
  return it == headers.end() ? std::string() : it->second;
}

void Disconnect::onDisconnect(std::function<void()> fn) {
  bool now;
  {
    std::lock_guard<std::mutex> lock(mutex);
    now = fired;
    if (!now)
      callback = std::move(fn);
  }
  if (now && fn)
    fn();
}

void Disconnect::fire() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (fired)
      return;
    fired = true;
    fn = std::move(callback);
  }
  if (fn)
    fn();
}

const char *statusReason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 413:
    return "Payload Too Large";
  case 415:
    return "Unsupported Media Type";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "";
  }
}

namespace {

constexpr uint32_t kMaxHeaderBytes = 16 * 1024;
/// How long a closing connection reads what its client still sends, so
/// that closing does not reset the connection before the answer arrives.
constexpr int kLingerSeconds = 2;

class Connection;

std::string lowerCase(std::string s) {
  for (char &c : s)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return s;
}

} // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  Handler handler;
  asio::io_context io;
  /// The acceptor and its retry timer run on one strand (drain() too).
  tcp::acceptor acceptor;
  asio::steady_timer retryAccept;
  /// Keeps run() going until a drain has closed every connection (a
  /// request waiting for its answer has no operation pending on asio).
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
      working;
  std::atomic<bool> draining{false};
  int boundPort = 0;
  std::function<void()> onDrain;
  std::mutex connectionsMutex;
  std::unordered_map<Connection *, std::weak_ptr<Connection>> connections;

  Impl(HttpServerOptions o, Handler h)
      : options(std::move(o)), handler(std::move(h)),
        io(std::max(1, options.threads)), acceptor(asio::make_strand(io)),
        retryAccept(acceptor.get_executor()) {
    working.emplace(io.get_executor());
  }

  void accept();
  void beginDrain();
  void connectionClosed(Connection *connection);
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
public:
  Connection(HttpServer::Impl &server, tcp::socket socket)
      : server(server), stream(std::move(socket)) {}

  void start() {
    asio::dispatch(stream.get_executor(),
                   [self = shared_from_this()] { self->readHeader(); });
  }

  /// From the drain: an idle connection closes now, a busy one after its
  /// answer.
  void closeIfIdle() {
    asio::post(stream.get_executor(), [self = shared_from_this()] {
      if (!self->busy)
        self->close();
    });
  }

  ~Connection() { server.connectionClosed(this); }

private:
  void readHeader() {
    if (server.draining) {
      close();
      return;
    }
    parser.emplace();
    parser->header_limit(kMaxHeaderBytes);
    parser->body_limit(server.options.maxBodyBytes);
    stream.expires_after(std::chrono::seconds(server.options.idleSeconds));
    http::async_read_header(
        stream, buffer, *parser,
        [self = shared_from_this()](beast::error_code ec, size_t) {
          self->onHeader(ec);
        });
  }

  void onHeader(beast::error_code ec) {
    if (ec)
      return onReadError(ec);
    const auto &header = parser->get();
    if (header.has_content_length() &&
        *parser->content_length() > server.options.maxBodyBytes)
      return answerAndClose(tooLarge());
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      // curl waits a second for this before sending a body.
      auto proceed = std::make_shared<http::response<http::empty_body>>(
          http::status::continue_, header.version());
      http::async_write(
          stream, *proceed,
          [self = shared_from_this(), proceed](beast::error_code ec, size_t) {
            if (ec)
              return self->close();
            self->readBody();
          });
      return;
    }
    readBody();
  }

  void readBody() {
    http::async_read(stream, buffer, *parser,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec)
                         return self->onReadError(ec);
                       self->dispatch();
                     });
  }

  HttpResponse tooLarge() {
    HttpResponse r;
    r.status = 413;
    r.body = "{\"error\": \"the request body is larger than " +
             std::to_string(server.options.maxBodyBytes) + " bytes\"}";
    return r;
  }

  void onReadError(beast::error_code ec) {
    if (ec == http::error::body_limit)
      return answerAndClose(tooLarge());
    if (ec == http::error::header_limit) {
      HttpResponse r;
      r.status = 431;
      r.body = "{\"error\": \"the request's headers are larger than " +
               std::to_string(kMaxHeaderBytes) + " bytes\"}";
      return answerAndClose(std::move(r));
    }
    // The client closed, went quiet, or the drain closed the socket.
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || !stream.socket().is_open())
      return close();
    // Bytes that are not HTTP.
    HttpResponse r;
    r.status = 400;
    r.body = "{\"error\": \"malformed HTTP request: " + ec.message() + "\"}";
    answerAndClose(std::move(r));
  }

  void dispatch() {
    stream.expires_never();
    http::request<http::string_body> message = parser->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    std::string target(message.target());
    size_t query = target.find('?');
    request.path = target.substr(0, query);
    if (query != std::string::npos)
      request.query = target.substr(query + 1);
    for (const auto &field : message)
      request.headers[lowerCase(std::string(field.name_string()))] =
          std::string(field.value());
    request.body = std::move(message.body());
    keepAlive = message.keep_alive();
    head = message.method() == http::verb::head;
    version = message.version();
    busy = true;
    clientGone = false;
    disconnect = std::make_shared<Disconnect>();
    watch();
    auto once = std::make_shared<std::atomic<bool>>(false);
    Respond respond = [self = shared_from_this(), once](HttpResponse response) {
      if (once->exchange(true))
        return;
      asio::post(self->stream.get_executor(),
                 [self, response = std::move(response)]() mutable {
                   self->answer(std::move(response), false);
                 });
    };
    try {
      server.handler(request, respond, disconnect);
    } catch (const std::exception &e) {
      HttpResponse r;
      r.status = 500;
      r.body = "{\"error\": \"internal error\"}";
      respond(std::move(r));
    }
  }

  /// While the answer is prepared: a client that hangs up (the socket
  /// reads as end of file) cancels its request. Bytes of a pipelined next
  /// request end the watch and stay in the socket.
  void watch() {
    stream.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this()](beast::error_code ec) {
          if (ec || !self->busy)
            return;
          char byte;
          ssize_t n = ::recv(self->stream.socket().native_handle(), &byte, 1,
                             MSG_PEEK | MSG_DONTWAIT);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                         errno != EINTR)) {
            self->clientGone = true;
            self->disconnect->fire();
          } else if (n < 0) {
            self->watch();
          }
        });
  }

  std::shared_ptr<http::response<http::string_body>> message(HttpResponse r,
                                                             bool keep) {
    auto m = std::make_shared<http::response<http::string_body>>(
        http::status(r.status), version ? version : 11);
    m->set(http::field::server, "loom");
    m->set(http::field::content_type, r.contentType);
    for (auto &[name, value] : r.headers)
      m->set(name, value);
    m->body() = std::move(r.body);
    m->keep_alive(keep);
    m->prepare_payload();
    if (head) {
      // A HEAD answer says the length of the body it does not send.
      uint64_t length = m->body().size();
      m->body().clear();
      m->content_length(length);
    }
    return m;
  }

  void answer(HttpResponse r, bool closeAfter) {
    busy = false;
    beast::error_code ignored;
    stream.socket().cancel(ignored); // the watch
    if (clientGone)
      return close();
    bool keep = keepAlive && !closeAfter && !server.draining;
    auto m = message(std::move(r), keep);
    stream.expires_after(std::chrono::seconds(server.options.idleSeconds));
    http::async_write(
        stream, *m,
        [self = shared_from_this(), m, keep](beast::error_code ec, size_t) {
          if (ec)
            return self->close();
          if (keep)
            return self->readHeader();
          self->lingerAndClose();
        });
  }

  void answerAndClose(HttpResponse r) {
    keepAlive = false;
    answer(std::move(r), true);
  }

  /// Closes after reading what the client still sends (a body we refused):
  /// closing with unread bytes would reset the connection, and the client
  /// could lose the answer.
  void lingerAndClose() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream.expires_after(std::chrono::seconds(kLingerSeconds));
    discard = std::make_shared<std::array<char, 4096>>();
    stream.async_read_some(
        asio::buffer(*discard),
        [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec)
            return self->close();
          self->lingerAndClose();
        });
  }

  void close() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }

  HttpServer::Impl &server;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::optional<http::request_parser<http::string_body>> parser;
  std::shared_ptr<Disconnect> disconnect;
  std::shared_ptr<std::array<char, 4096>> discard;
  bool keepAlive = false;
  bool head = false;
  unsigned version = 0;
  bool busy = false;
  bool clientGone = false;
};

} // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec,
                                                      tcp::socket socket) {
    if (!acceptor.is_open())
      return;
    if (ec) {
      // Out of descriptors (or a connection reset while queued): try again
      // a moment later rather than spin on the error.
      retryAccept.expires_after(std::chrono::milliseconds(50));
      retryAccept.async_wait([this](beast::error_code waitError) {
        if (!waitError && acceptor.is_open())
          accept();
      });
      return;
    }
    auto connection = std::make_shared<Connection>(*this, std::move(socket));
    {
      std::lock_guard<std::mutex> lock(connectionsMutex);
      connections[connection.get()] = connection;
    }
    connection->start();
    accept();
  });
}

void HttpServer::Impl::connectionClosed(Connection *connection) {
  std::lock_guard<std::mutex> lock(connectionsMutex);
  connections.erase(connection);
  if (draining && connections.empty())
    asio::post(io, [this] { working.reset(); });
}

void HttpServer::Impl::beginDrain() {
  if (draining.exchange(true))
    return;
  beast::error_code ignored;
  acceptor.close(ignored);
  retryAccept.cancel();
  if (onDrain)
    onDrain();
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard<std::mutex> lock(connectionsMutex);
    for (auto &[raw, weak] : connections)
      if (auto connection = weak.lock())
        open.push_back(std::move(connection));
    if (connections.empty())
      asio::post(io, [this] { working.reset(); });
  }
  for (std::shared_ptr<Connection> &connection : open)
    connection->closeIfIdle();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

HttpServer::~HttpServer() { impl->io.stop(); }

ErrorOr<std::unique_ptr<HttpServer>>
HttpServer::listen(HttpServerOptions options, Handler handler) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(impl->options.host, ec);
  if (ec)
    return Status::failure("'" + impl->options.host +
                               "' is not an IP address to listen on",
                           ErrorCode::InvalidArgument);
  if (impl->options.port < 0 || impl->options.port > 65535)
    return Status::failure("port " + std::to_string(impl->options.port) +
                               " is not between 0 and 65535",
                           ErrorCode::InvalidArgument);
  tcp::endpoint endpoint(address, uint16_t(impl->options.port));
  std::string where =
      impl->options.host + ":" + std::to_string(impl->options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    impl->acceptor.bind(endpoint, ec);
  if (!ec)
    impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::failure("cannot listen on " + where + ": " + ec.message(),
                           ErrorCode::Unsupported);
  impl->boundPort = impl->acceptor.local_endpoint().port();
  impl->accept();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl->boundPort; }

void HttpServer::setOnDrain(std::function<void()> callback) {
  impl->onDrain = std::move(callback);
}

void HttpServer::drain() {
  // On the acceptor's strand: the drain closes it, which must not race an
  // accept completing.
  asio::post(impl->acceptor.get_executor(),
             [raw = impl.get()] { raw->beginDrain(); });
}

void HttpServer::run() {
  std::vector<std::thread> threads;
  for (int t = 1; t < impl->options.threads; ++t)
    threads.emplace_back([this] { impl->io.run(); });
  impl->io.run();
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace loom::serve
