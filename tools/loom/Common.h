//===- Common.h - What the loom subcommands share ---------------*- C++ -*-===//
//
// Every subcommand reports a problem the same way: one line on stderr naming
// what is wrong (a file, a line, a field, a tensor) and exit code 1. The
// helpers here return llvm::Error so a command can stop at the first
// problem and print it with `fail`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_COMMON_H
#define LOOM_TOOLS_LOOM_COMMON_H

#include "frontend/Config.h"
#include "frontend/InterpretedModel.h"

#include "abi/Error.h"

#include "CLI/CLI.hpp"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cli {

/// The runtime's failure as an llvm::Error (success for an ok status).
llvm::Error toError(const Status &status);
/// The message of `err` as a Status, for the libraries that take a callback
/// written in the commands' terms (train::ModelSource).
Status toStatus(llvm::Error err);
template <typename T> llvm::Expected<T> toExpected(ErrorOr<T> value) {
  if (!value)
    return toError(value.status());
  return std::move(*value);
}

/// Prints "loom <command>: error: <message>" and returns exit code 1.
int fail(llvm::StringRef command, llvm::Error err);

/// Where the model's config comes from: `--preset NAME` or `--config FILE`.
struct ModelOptions {
  std::string preset;
  std::string configPath;

  /// Adds the two options to `cmd`, exactly one of them required.
  void addTo(CLI::App *cmd);
  llvm::Expected<TransformerConfig> load() const;
};

/// Refuses an input file named by `what` (an option, "--weights") that is
/// an empty path, missing, or not a regular file (a directory, a FIFO).
llvm::Error checkInputFile(const std::string &path, llvm::StringRef what);

/// Refuses an output file named by `what` that is an empty path, an
/// existing directory, or the same file as one of `inputs`: writing it would
/// destroy an input, and a failed run must leave its inputs as they were.
llvm::Error checkOutputFile(const std::string &path, llvm::StringRef what,
                            const std::vector<std::string> &inputs);

/// Refuses an output directory that is an empty path (which would put the
/// files at the root of the file system) or an existing non-directory.
llvm::Error checkOutputDir(const std::string &path, llvm::StringRef what);

/// A program installed beside the running `loom` (the build tree's bin/, or
/// an installed prefix's), named `name`; refused with where it was looked
/// for when it is not there or cannot be run.
llvm::Expected<std::string> programBesideLoom(llvm::StringRef name);

/// Whether `a` and `b` name the same file (through links too), or, when
/// one does not exist yet, the same path.
bool sameFile(const std::string &a, const std::string &b);

/// The token ids of a file: one sentence per line, space-separated ids.
/// `what` names the file in messages ("src-ids"); every id must lie in
/// [0, vocab) (`vocabField` names the config field that sets vocab), and no
/// sentence may be longer than `maxLen`.
llvm::Expected<std::vector<std::vector<int64_t>>>
readIdFile(const std::string &path, llvm::StringRef what, int64_t vocab,
           llvm::StringRef vocabField, int64_t maxLen);

/// Loads the safetensors file at `path` as the model's parameters: every
/// parameter in `shapes` must be present with exactly its shape and a float
/// dtype, and the file may hold nothing else. Values are rounded to f32.
llvm::Expected<NamedTensors>
loadWeights(const std::string &path,
            const std::map<std::string, std::vector<int64_t>> &shapes);

/// Writes `tensors` as F32 safetensors at `path` (atomically).
llvm::Error saveWeights(const std::string &path, const NamedTensors &tensors);

/// Checks `--backend`: cpu or interpreter.
llvm::Error checkBackend(const std::string &backend);

/// Adds `--precision` (fp32, int8 or bf16: what decoding's linear layers
/// multiply in on the CPU) to `cmd`, as every command that compiles a
/// decoder takes it.
CLI::Option *addPrecisionOption(CLI::App *cmd, std::string &precision);
/// Adds `--precision` (fp32 or bf16: what the training step's products
/// multiply in) to `train` and `prepare`.
CLI::Option *addTrainingPrecisionOption(CLI::App *cmd, std::string &precision);

/// The bytes of `--bucket-mb` MiB of gradients per all-reduce: at least a
/// float, at most 1 TiB.
llvm::Expected<int64_t> bucketBytes(double mb);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_COMMON_H
