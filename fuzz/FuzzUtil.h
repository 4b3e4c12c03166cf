//===- FuzzUtil.h - Helpers shared by the fuzz targets ----------*- C++ -*-===//
//
// The loaders under test read paths, as they do in production. A fuzz input
// becomes a file without touching the disk: an anonymous memory file
// (memfd), named by its /proc/self/fd path for as long as it is open.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FUZZ_FUZZUTIL_H
#define LOOM_FUZZ_FUZZUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace loom::fuzz {

/// Stops the fuzzer with `what` when an invariant of the code under test
/// does not hold; libFuzzer saves the input that broke it.
[[noreturn]] inline void fail(const std::string &what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

/// An in-memory file holding some bytes.
class MemFile {
public:
  explicit MemFile(const void *data, size_t size) {
    fd = ::memfd_create("loom-fuzz", MFD_CLOEXEC);
    if (fd < 0)
      fail("memfd_create failed");
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      ssize_t n = ::write(fd, p, size);
      if (n <= 0)
        fail("cannot write a memory file");
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  explicit MemFile(const std::string &bytes)
      : MemFile(bytes.data(), bytes.size()) {}
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  ~MemFile() { ::close(fd); }

  /// A path every open() in this process resolves to the file.
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }

private:
  int fd = -1;
};

} // namespace loom::fuzz

#endif // LOOM_FUZZ_FUZZUTIL_H
