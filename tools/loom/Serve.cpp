//===- Serve.cpp - `loom serve` -------------------------------------------===//
//
// Serves a model directory over HTTP: the decoder is compiled (or its cached
// translate.loomx reused, as `loom translate` does) while the server already
// answers /health as loading; then the same server as the shipped
// loom-serve (serve/Server.h).
//
//===----------------------------------------------------------------------===//

#include "tools/loom/Commands.h"
#include "tools/loom/Common.h"
#include "tools/loom/ModelDir.h"

#include "tools/ServeFlags.h"

namespace loom::cli {

namespace {

struct ServeCommand {
  std::string model;
  std::string precision = "fp32";
  ServeFlags flags;
};

ErrorOr<std::unique_ptr<Translator>> load(const ServeCommand &o) {
  auto translator =
      openModelTranslator(o.model, o.flags.opening, o.precision, "loom serve");
  if (!translator)
    return Status::failure(llvm::toString(translator.takeError()));
  return std::move(*translator);
}

} // namespace

void addServeCommand(CLI::App &app, int &exitCode) {
  auto o = std::make_shared<ServeCommand>();
  CLI::App *cmd = app.add_subcommand(
      "serve", "Serve translations over HTTP with a model directory "
               "(LibreTranslate's POST /translate, POST /v1/translate, "
               "/health, /metrics, /languages, a page at /), batching "
               "sentences across requests");
  cmd->add_option("--model", o->model, "The model directory")->required();
  cmd->add_option("--weights", o->flags.opening.weights,
                  "Parameters to use instead of the model's "
                  "model.safetensors");
  addServeFlags(cmd, o->flags);
  addPrecisionOption(cmd, o->precision);
  cmd->callback([o, &exitCode] {
    Status finished = finishServeFlags(o->flags);
    if (!finished.ok()) {
      std::fprintf(stderr, "loom serve: error: %s\n",
                   finished.message().c_str());
      exitCode = 1;
      return;
    }
    exitCode = serve::runServer("loom serve", o->flags.serve,
                                [o] { return load(*o); });
  });
}

} // namespace loom::cli
