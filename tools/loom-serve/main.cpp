//===- main.cpp - loom-serve: a shipped translation server ----------------===//
//
// Serves a translator folder over HTTP (serve/Service.h), by default the
// folder this binary sits in, as `loom export` writes it. Like
// loom-translate it links the runtime and text/ only: no compiler.
//
//===----------------------------------------------------------------------===//

#include "tools/BinaryDir.h"
#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"
#include "tools/ServeFlags.h"

#include <cstdio>

int main(int argc, char **argv) {
  loom::skipLibraryDestructorsOnExit();
  CLI::App app{"Serve translations over HTTP with a Loom translator folder: "
               "LibreTranslate's POST /translate, POST /v1/translate, GET "
               "/health, /metrics, /languages and a page at /"};
  std::string model;
  loom::ServeFlags flags;
  app.add_option("--model", model,
                 "The translator folder (default: the folder of this "
                 "binary)");
  loom::addServeFlags(&app, flags);
  loom::makeStrict(app, "loom-serve");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return loom::usageExit(app, e);
  }
  loom::Status finished = loom::finishServeFlags(flags);
  if (!finished.ok()) {
    std::fprintf(stderr, "loom-serve: error: %s\n", finished.message().c_str());
    return 1;
  }
  std::string dir = model.empty() ? loom::binaryDir() : model;
  int code = loom::serve::runServer("loom-serve", flags.serve, [&] {
    return loom::Translator::open(dir, flags.opening);
  });
  return loom::exitWithoutLibraryDestructors(code);
}
