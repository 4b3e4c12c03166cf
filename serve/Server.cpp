//===- Server.cpp - A translation server from start to exit ---------------===//

#include "serve/Server.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

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

int runServer(
    const std::string &tool, const ServeOptions &options,
    const std::function<ErrorOr<std::unique_ptr<Translator>>()> &load) {
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

  auto start = std::chrono::steady_clock::now();
  ErrorOr<std::unique_ptr<Translator>> translator = load();
  if (!translator) {
    std::fprintf(stderr, "%s: error: %s\n", tool.c_str(),
                 translator.status().message().c_str());
    (*server)->drain();
    http.join();
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
  service.stop();
  std::fprintf(stderr, "%s: stopped\n", tool.c_str());
  return 0;
}

} // namespace loom::serve
