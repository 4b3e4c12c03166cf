//===- CommandLine.h - Strict command lines for Loom's tools ----*- C++ -*-===//
//
// CLI11 converts numbers leniently: an integer past int64 becomes INT64_MAX,
// an empty value becomes 0, "1e400" becomes infinity and an unsigned option
// takes "-1" as 2^64-1. Each of those ran a command on a value the user never
// asked for, so every tool checks the numbers it was given here, once,
// before any command runs, and reports usage errors as one `error:` line
// with exit code 1 like every other refusal.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_COMMANDLINE_H
#define LOOM_TOOLS_COMMANDLINE_H

#include "CLI/CLI.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace loom {

/// Why `value`, given to an option of CLI11 type `type` ("INT", "UINT",
/// "FLOAT"), is not the number it looks like; empty when it is fine.
inline std::string strictNumberProblem(const std::string &type,
                                       const std::string &value) {
  bool isInt = type == "INT", isUint = type == "UINT",
       isFloat = type == "FLOAT";
  if (!isInt && !isUint && !isFloat)
    return "";
  if (value.empty())
    return "an empty value is not a number";
  errno = 0;
  char *end = nullptr;
  if (isFloat) {
    // Only overflow: a value too small for a double rounds towards 0 as
    // the user would expect.
    double parsed = std::strtod(value.c_str(), &end);
    if (errno == ERANGE && !std::isinf(parsed))
      errno = 0;
  } else if (isUint && value.find('-') != std::string::npos)
    return "'" + value + "' is negative";
  else if (isUint)
    std::strtoull(value.c_str(), &end, 10);
  else
    std::strtoll(value.c_str(), &end, 10);
  // Overflow (and a float that underflows to zero) is out of range; text
  // that is not a plain decimal number is left to CLI11, which refuses it.
  if (errno == ERANGE)
    return "'" + value + "' is out of range";
  return "";
}

/// Refuses lenient numbers among the options given to `app` and to its
/// subcommands, throwing CLI::ValidationError naming the option.
inline void checkStrictNumbers(const CLI::App &app) {
  for (const CLI::Option *option : app.get_options()) {
    if (option->count() == 0)
      continue;
    for (const std::string &value : option->results()) {
      std::string problem = strictNumberProblem(option->get_type_name(), value);
      if (!problem.empty())
        throw CLI::ValidationError(option->get_name(), problem);
    }
  }
  for (const CLI::App *sub : app.get_subcommands())
    checkStrictNumbers(*sub);
}

/// Makes `app` strict: the numbers check runs once parsing is complete and
/// before any command's callback; usage errors print one line,
/// "<tool>: error: <what> (see --help)".
inline void makeStrict(CLI::App &app, const std::string &tool) {
  app.parse_complete_callback([&app] { checkStrictNumbers(app); });
  app.failure_message([tool](const CLI::App *, const CLI::Error &e) {
    return tool + ": error: " + e.what() + " (see --help)\n";
  });
}

/// The exit code for a parse error: 0 for --help and --version (which
/// CLI11 reports as errors), else 1 after printing the message.
inline int usageExit(CLI::App &app, const CLI::ParseError &e) {
  return app.exit(e) == 0 ? 0 : 1;
}

} // namespace loom

#endif // LOOM_TOOLS_COMMANDLINE_H
