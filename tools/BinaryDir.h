//===- BinaryDir.h - The folder a shipped tool sits in ----------*- C++ -*-===//
//
// `loom-translate` reads the translator folder it sits in and `loom-train`
// trains in the folder `loom prepare` wrote it into, by default: both ask
// where their binary is.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_BINARYDIR_H
#define LOOM_TOOLS_BINARYDIR_H

#include <climits>
#include <string>
#include <unistd.h>

namespace loom {

/// The directory of this binary, or "." when unknown.
inline std::string binaryDir() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    return ".";
  std::string path(buffer, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

} // namespace loom

#endif // LOOM_TOOLS_BINARYDIR_H
