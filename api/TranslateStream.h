//===- TranslateStream.h - Lines in, translations out -----------*- C++ -*-===//
//
// What `loom translate` and `loom-translate` both do with a translator, so
// the two print the same bytes for the same input: read UTF-8 lines (stdin
// or a file; a trailing CR is dropped, invalid UTF-8 is refused with its
// line), translate them, and print each sentence's n-best translations, one
// per line, in input order. Warnings go to `warn` (stderr in the commands).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRANSLATESTREAM_H
#define LOOM_API_TRANSLATESTREAM_H

#include "api/Translator.h"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace loom {

/// The lines of `path`, or of stdin when it is empty.
ErrorOr<std::vector<std::string>> readInputLines(const std::string &path);

/// Translates the lines of `inputPath` (stdin when empty) to `out`.
Status translateStream(Translator &translator,
                       const TranslationOptions &options,
                       const std::string &inputPath, std::FILE *out,
                       const std::function<void(const std::string &)> &warn);

} // namespace loom

#endif // LOOM_API_TRANSLATESTREAM_H
