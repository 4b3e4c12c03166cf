//===- AtomicFile.h - Writing a file so a crash never tears it --*- C++ -*-===//
//
// Checkpoints and executables are written to a unique temporary file beside
// the target, flushed to disk, renamed over the target (atomic within one
// file system), and the directory is flushed so the rename itself persists.
// A crash at any point leaves either the old file or the new one.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ATOMICFILE_H
#define LOOM_RUNTIME_ATOMICFILE_H

#include "abi/Error.h"

#include <cstddef>
#include <string>
#include <vector>

namespace loom {

/// A run of bytes to write; the file is the concatenation of the pieces, so
/// large tensors are written where they are, not copied into one buffer.
struct BytePiece {
  const void *data;
  size_t size;
};

/// Writes `pieces` to `path` atomically; `executable` makes the file
/// runnable (rwxr-xr-x, less the umask) before it appears. Fails with Io
/// and a message naming the file.
Status writeFileAtomically(const std::string &path,
                           const std::vector<BytePiece> &pieces,
                           bool executable = false);

/// Copies the file at `from` to `to` atomically (a binary, a module, a
/// model's file shipped in a folder). Fails with Io naming the file that
/// could not be read or written.
Status copyFileAtomically(const std::string &from, const std::string &to,
                          bool executable = false);

/// Deletes the temporaries that writeFileAtomically left in `dir` when its
/// process died mid-write (named `<file>.tmp.<pid>.<n>`, for a pid that no
/// longer runs). A missing `dir` has none. Fails with Io naming a file that
/// cannot be deleted.
Status removeStaleTemporaries(const std::string &dir);

} // namespace loom

#endif // LOOM_RUNTIME_ATOMICFILE_H
