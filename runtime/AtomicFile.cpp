//===- AtomicFile.cpp - Writing a file so a crash never tears it ----------===//

#include "runtime/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace loom {

namespace {

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

Status writeFileAtomically(const std::string &path,
                           const std::vector<BytePiece> &pieces) {
  // A unique name beside the target keeps the rename within one file system,
  // so it is atomic.
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return Status::failure(
        "cannot create '" + tmp + "': " + std::strerror(errno), ErrorCode::Io);
  bool ok = true;
  for (const BytePiece &piece : pieces)
    ok = ok && writeAll(fd, piece.data, piece.size);
  ok = ok && ::fsync(fd) == 0;
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok)
      savedErrno = errno;
    ::unlink(tmp.c_str());
    return Status::failure("cannot write '" + path +
                               "': " + std::strerror(savedErrno),
                           ErrorCode::Io);
  }
  // Persist the rename itself; failure here loses durability, not data.
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return Status::success();
}

} // namespace loom
