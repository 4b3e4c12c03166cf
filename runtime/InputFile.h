//===- InputFile.h - A path a user gave as a file to read -------*- C++ -*-===//
//
// Every command that reads a file named on its command line (a corpus, an
// ONNX model, a list of ids) checks it here first, so that a missing file,
// a directory or a device gets the same one-line refusal naming the flag,
// rather than whatever the reader behind it happens to say.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_INPUTFILE_H
#define LOOM_RUNTIME_INPUTFILE_H

#include "abi/Error.h"

#include <string>

namespace loom {

/// `path`, given as `what` (a flag or a description), names a regular file
/// that exists. Fails with InvalidArgument and a message that starts with
/// `what`: the path is empty, missing, a directory or not a regular file.
Status checkInputFile(const std::string &path, const std::string &what);

} // namespace loom

#endif // LOOM_RUNTIME_INPUTFILE_H
