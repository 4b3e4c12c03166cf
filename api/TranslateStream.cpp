//===- TranslateStream.cpp - Lines in, translations out -------------------===//

#include "api/TranslateStream.h"

#include "text/Bleu.h"
#include "text/LineReader.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace loom {

ErrorOr<std::vector<std::string>> readInputLines(const std::string &path) {
  std::ifstream file;
  if (!path.empty()) {
    // A directory opens, then throws from inside the stream on reading.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return Status::failure("'" + path + "' is a directory, not a file",
                             ErrorCode::InvalidArgument);
    file.open(path, std::ios::binary);
    if (!file)
      return Status::failure("cannot open '" + path +
                                 "': " + std::strerror(errno),
                             ErrorCode::NotFound);
  }
  std::istream &in = path.empty() ? std::cin : file;
  std::vector<std::string> lines;
  std::string line;
  text::LineReader reader(in);
  std::string name = path.empty() ? "<stdin>" : path;
  while (reader.next(line)) {
    std::string where = name + ":" + std::to_string(reader.lineNumber());
    if (reader.tooLong())
      return Status::failure(where + ": line longer than " +
                             std::to_string(text::kMaxLineBytes) +
                             " bytes; not a sentence");
    if (!text::isValidUtf8(line))
      return Status::failure(where + ": invalid UTF-8");
    lines.push_back(line);
  }
  if (in.bad())
    return Status::failure("cannot read '" + (path.empty() ? "<stdin>" : path) +
                               "'",
                           ErrorCode::Io);
  return lines;
}

Status translateStream(Translator &translator,
                       const TranslationOptions &options,
                       const std::string &inputPath, std::FILE *out,
                       const std::function<void(const std::string &)> &warn) {
  ErrorOr<std::vector<std::string>> lines = readInputLines(inputPath);
  if (!lines)
    return lines.status();
  auto translated = translator.translate(*lines, options, warn);
  if (!translated)
    return translated.status();
  for (const std::vector<Translation> &nbest : *translated)
    for (const Translation &t : nbest)
      std::fprintf(out, "%s\n", t.text.c_str());
  if (std::fflush(out) != 0)
    return Status::failure(std::string("cannot write the translations: ") +
                               std::strerror(errno),
                           ErrorCode::Io);
  return Status::success();
}

} // namespace loom
