//===- Server.cpp - A translation server from start to exit ---------------===//

#include "serve/Server.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace loom::serve {

ErrorOr<std::string> readApiKeyFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::failure("cannot read the API key file '" + path + "'",
                           ErrorCode::NotFound);
  std::string line;
  std::getline(in, line);
  size_t first = line.find_first_not_of(" \t\r");
  size_t last = line.find_last_not_of(" \t\r");
  std::string key =
      first == std::string::npos ? "" : line.substr(first, last - first + 1);
  if (key.empty())
    return Status::failure("the API key file '" + path +
                               "' holds no key on its first line",
                           ErrorCode::InvalidArgument);
  return key;
}

namespace {

/// The write end of the stop pipe, for the signal handler.
int stopSignalWriter = -1;

void onStopSignal(int) {
  char byte = 1;
  // Async-signal-safe; a full pipe already holds a stop.
  ssize_t ignored = ::write(stopSignalWriter, &byte, 1);
  (void)ignored;
}

/// Installs the handler; returns the read end of its pipe.
ErrorOr<int> installStopSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::failure(std::string("cannot make a pipe: ") +
                               std::strerror(errno),
                           ErrorCode::Io);
  stopSignalWriter = fds[1];
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return fds[0];
}

} // namespace

int runServer(
    const std::string &tool, const ServeOptions &options,
    const std::function<ErrorOr<std::unique_ptr<Translator>>()> &load) {
  // SIGTERM and SIGINT write a byte to a pipe; a thread reading it starts
  // the drain. A handler, not a blocked mask with sigwait: libraries start
  // threads before main (OpenBLAS's pool), and a signal delivered to one of
  // them would take its default action and kill the server.
  ErrorOr<int> stopPipe = installStopSignals();
  if (!stopPipe) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(),
                 stopPipe.status().message().c_str());
    return 1;
  }
  Service service(options);
  ErrorOr<std::unique_ptr<HttpServer>> server =
      HttpServer::listen(options.http, service.handler());
  if (!server) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(),
                 server.status().message().c_str());
    return 1;
  }
  (*server)->setOnDrain([&] {
    service.draining();
    std::fprintf(stderr,
                 "%s: stopping: no new connections; answering the requests "
                 "in flight\n",
                 tool.c_str());
  });
  std::fprintf(stderr, "%s: listening on http://%s:%d\n", tool.c_str(),
               options.http.host.c_str(), (*server)->port());
  std::fflush(stderr);
  std::thread http([&] { (*server)->run(); });
  std::thread signals([&] {
    char byte = 0;
    while (::read(*stopPipe, &byte, 1) < 0 && errno == EINTR) {
    }
    // A byte from a signal (1) drains; the one written below (0) ends.
    if (byte == 1)
      (*server)->drain();
  });
  // Wakes the signal thread once the server stopped some other way.
  auto stopSignalThread = [&] {
    char byte = 0;
    ssize_t ignored = ::write(stopSignalWriter, &byte, 1);
    (void)ignored;
    signals.join();
  };
  auto start = std::chrono::steady_clock::now();
  ErrorOr<std::unique_ptr<Translator>> translator = load();
  if (!translator) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(),
                 translator.status().message().c_str());
    (*server)->drain();
    http.join();
    stopSignalThread();
    return 1;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int workers = (*translator)->workers();
  service.ready(std::move(*translator), seconds);
  std::fprintf(stderr, "%s: ready in %.2f s (%d worker%s)\n", tool.c_str(),
               seconds, workers, workers == 1 ? "" : "s");
  std::fflush(stderr);
  http.join();
  stopSignalThread();
  service.stop();
  std::fprintf(stderr, "%s: stopped\n", tool.c_str());
  return 0;
}

} // namespace loom::serve
