//===- Server.h - A translation server from start to exit -------*- C++ -*-===//
//
// What `loom serve` and `loom-serve` both run: listen first (so that
// /health answers "loading" while a model compiles or loads), load, serve,
// and on SIGTERM or SIGINT drain: stop accepting, answer what was read,
// decode what was queued, exit 0.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SERVE_SERVER_H
#define LOOM_SERVE_SERVER_H

#include "serve/Service.h"

#include <functional>
#include <memory>
#include <string>

namespace loom::serve {

/// Runs the server; returns the process's exit code. `tool` prefixes what
/// goes to stderr ("loom serve: listening on http://127.0.0.1:8080").
int runServer(
    const std::string &tool, const ServeOptions &options,
    const std::function<ErrorOr<std::unique_ptr<Translator>>()> &load);

/// The key in `path`: its first line, without surrounding blanks. A file
/// missing or without a key is refused (an empty key would let anyone in).
ErrorOr<std::string> readApiKeyFile(const std::string &path);

} // namespace loom::serve

#endif // LOOM_SERVE_SERVER_H
