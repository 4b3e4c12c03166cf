//===- main.cpp - loom-translate: a shipped translator --------------------===//
//
// Translates stdin (or --input) to stdout with a translator folder, by
// default the folder this binary sits in, as `loom export` writes it. It
// links the runtime and text/ only: no compiler, so it starts in
// milliseconds and runs where no LLVM is installed. Its output is exactly
// `loom translate`'s for the same model and options.
//
//===----------------------------------------------------------------------===//

#include "api/TranslateStream.h"
#include "tools/BinaryDir.h"
#include "tools/CommandLine.h"
#include "tools/ProcessExit.h"
#include "tools/TranslateFlags.h"

#include <cstdio>

int main(int argc, char **argv) {
  loom::skipLibraryDestructorsOnExit();
  CLI::App app{"Translate sentences, one per line, with a Loom translator "
               "folder (stdin to stdout)"};
  std::string model;
  loom::TranslateStreamOptions input;
  loom::TranslatorOptions opening;
  loom::TranslationOptions options;
  app.add_option("--model", model,
                 "The translator folder (default: the folder of this "
                 "binary)");
  loom::addTranslateFlags(&app, input, opening, options);
  int timeRuns = 0;
  loom::addTimeRunsFlag(&app, timeRuns);
  loom::makeStrict(app, "loom-translate");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return loom::usageExit(app, e);
  }

  auto fail = [](const loom::Status &status) {
    std::fprintf(stderr, "loom-translate: error: %s\n",
                 status.message().c_str());
    return 1;
  };
  auto translator = loom::Translator::open(
      model.empty() ? loom::binaryDir() : model, opening);
  if (!translator)
    return fail(translator.status());
  loom::TranslationTimes times;
  loom::Status status = loom::translateStream(
      **translator, options, input, stdout,
      [](const std::string &warning) {
        std::fprintf(stderr, "loom-translate: warning: %s\n", warning.c_str());
      },
      timeRuns, &times);
  if (status.ok() && timeRuns > 0)
    std::fprintf(stderr, "%s\n",
                 loom::translationTimesJson(times, "loom-translate", opening,
                                            options)
                     .c_str());
  return loom::exitWithoutLibraryDestructors(status.ok() ? 0 : fail(status));
}
