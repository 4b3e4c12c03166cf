//===- AtomicFile.cpp - Writing a file so a crash never tears it ----------===//

#include "runtime/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <signal.h>
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

/// The pid in a temporary's name `<file>.tmp.<pid>.<n>`, or -1 when `name`
/// is not one.
long temporaryOwner(const std::string &name) {
  size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0)
    return -1;
  std::string rest = name.substr(at + 5);
  size_t dot = rest.find('.');
  auto digits = [](const std::string &text) {
    return !text.empty() && text.size() <= 9 &&
           text.find_first_not_of("0123456789") == std::string::npos;
  };
  if (dot == std::string::npos || !digits(rest.substr(0, dot)) ||
      !digits(rest.substr(dot + 1)))
    return -1;
  return std::stol(rest.substr(0, dot));
}

bool processRuns(long pid) {
  return pid == ::getpid() || ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
}

} // namespace

Status writeFileAtomically(const std::string &path,
                           const std::vector<BytePiece> &pieces,
                           bool executable) {
  // A unique name beside the target keeps the rename within one file system,
  // so it is atomic.
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                  executable ? 0777 : 0666);
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

Status copyFileAtomically(const std::string &from, const std::string &to,
                          bool executable) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes;
  if (in)
    bytes.assign(std::istreambuf_iterator<char>(in),
                 std::istreambuf_iterator<char>());
  if (!in && !in.eof())
    return Status::failure(
        "cannot read '" + from + "': " + std::strerror(errno), ErrorCode::Io);
  return writeFileAtomically(to, {BytePiece{bytes.data(), bytes.size()}},
                             executable);
}

Status removeStaleTemporaries(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::success();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    long owner = temporaryOwner(it->path().filename().string());
    if (owner <= 0 || processRuns(owner) || !it->is_regular_file(ec))
      continue;
    std::error_code removed;
    fs::remove(it->path(), removed);
    if (removed)
      return Status::failure("cannot delete the stale temporary '" +
                                 it->path().string() +
                                 "': " + removed.message(),
                             ErrorCode::Io);
  }
  if (ec)
    return Status::failure("cannot list '" + dir + "': " + ec.message(),
                           ErrorCode::Io);
  return Status::success();
}

} // namespace loom
