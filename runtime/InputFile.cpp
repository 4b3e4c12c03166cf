//===- InputFile.cpp - A path a user gave as a file to read ---------------===//

#include "runtime/InputFile.h"

#include <filesystem>

namespace loom {

Status checkInputFile(const std::string &path, const std::string &what) {
  auto invalid = [&](const std::string &why) {
    return Status::failure(what + ": " + why, ErrorCode::InvalidArgument);
  };
  if (path.empty())
    return invalid("the path is empty");
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return invalid("cannot read '" + path +
                   "': " + (ec ? ec.message() : "no such file"));
  if (std::filesystem::is_directory(status))
    return invalid("'" + path + "' is a directory, not a file");
  if (!std::filesystem::is_regular_file(status))
    return invalid("'" + path + "' is not a regular file");
  return Status::success();
}

} // namespace loom
