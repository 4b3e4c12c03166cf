//===- TranslatorFolder.cpp - Writing a folder that translates ------------===//

#include "api/TranslatorFolder.h"

#include "api/Translator.h"
#include "runtime/AtomicFile.h"
#include "runtime/Safetensors.h"
#include "runtime/Weights.h"
#include "text/Tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <tuple>

namespace loom {

namespace {

/// The names a translator folder holds.
constexpr const char *kFolderEntries[] = {
    "loom-translate", "loom-serve", "lib",       kTranslateExecutable,
    kModelWeights,    kVocabulary,  kModelConfig};

/// `out` may be written when it is new, empty, or a translator folder an
/// earlier export wrote (it holds loom-translate and nothing else but a
/// folder's files): never a model directory or any other folder of the
/// user's, whose files an export would mix with its own.
Status checkOutFolder(const std::string &out) {
  std::error_code ec;
  if (!std::filesystem::exists(out, ec))
    return Status::success();
  if (!std::filesystem::is_directory(out, ec))
    return Status::failure("'" + out + "' exists and is not a folder",
                           ErrorCode::InvalidArgument);
  std::vector<std::string> foreign;
  bool exported = false;
  for (const auto &entry : std::filesystem::directory_iterator(out, ec)) {
    std::string name = entry.path().filename().string();
    exported |= name == "loom-translate";
    if (std::find(std::begin(kFolderEntries), std::end(kFolderEntries),
                  name) == std::end(kFolderEntries))
      foreign.push_back(name);
  }
  if (ec)
    return Status::failure("cannot list '" + out + "': " + ec.message(),
                           ErrorCode::Io);
  if (foreign.empty() && (exported || std::filesystem::is_empty(out, ec)))
    return Status::success();
  std::string names;
  for (size_t i = 0; i < foreign.size() && i < 3; ++i)
    names += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 3)
    names += ", ...";
  return Status::failure(
      "'" + out + "' is not empty and not a folder `loom export` wrote" +
          (names.empty() ? std::string() : " (it holds " + names + ")") +
          ": export to a new or empty folder, or over an earlier export",
      ErrorCode::InvalidArgument);
}

} // namespace

ErrorOr<uint64_t> writeTranslatorFolder(const std::string &out,
                                        const TranslatorFolderParts &parts) {
  LOOM_RETURN_IF_ERROR(checkOutFolder(out));
  const runtime::Program &program = *parts.program;
  // The weights must fit the executable; their header says so without a
  // session, which an executable for another CPU level could not have here.
  LOOM_RETURN_IF_ERROR(runtime::checkParametersFile(program, parts.weights));
  // The vocabulary is loaded, not only copied: a damaged or foreign one
  // would make a folder that fails (or translates garbage) where it ships.
  ErrorOr<text::Tokenizer> tokenizer =
      text::Tokenizer::loadFile(parts.vocabulary);
  if (!tokenizer)
    return tokenizer.status();
  LOOM_RETURN_IF_ERROR(
      checkTranslatorFiles(program, *tokenizer, parts.weights));
  // The values too, not only the header: a folder that ships NaN weights
  // (or a tensor that fails its checksum) fails wherever it goes.
  LOOM_RETURN_IF_ERROR(readSafetensors(
      parts.weights, [](const SafeTensorFile &) { return Status::success(); },
      [&](const std::string &name, SafeTensor &tensor) {
        if (std::optional<NonFinite> bad = firstNonFinite(tensor))
          return Status::failure("weights '" + parts.weights +
                                     "': parameter '" + name + "' holds " +
                                     bad->describe(),
                                 ErrorCode::InvalidArgument);
        return Status::success();
      }));

  std::error_code ec;
  std::filesystem::create_directories(out + "/lib", ec);
  if (ec)
    return Status::failure("cannot create '" + out + "/lib': " + ec.message(),
                           ErrorCode::Io);
  LOOM_RETURN_IF_ERROR(
      saveExecutable(out + "/" + kTranslateExecutable, program.executable()));
  std::string module =
      std::filesystem::path(parts.tokenizerModule).filename().string();
  for (auto [from, to, executable] :
       {std::tuple{parts.weights, std::string(kModelWeights), false},
        std::tuple{parts.vocabulary, std::string(kVocabulary), false},
        std::tuple{parts.config, std::string(kModelConfig), false},
        std::tuple{parts.translator, std::string("loom-translate"), true},
        std::tuple{parts.server, std::string("loom-serve"), true},
        std::tuple{parts.tokenizerModule, "lib/" + module, false}})
    LOOM_RETURN_IF_ERROR(copyFileAtomically(from, out + "/" + to, executable));
  return folderBytes(out);
}

uint64_t folderBytes(const std::string &dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto &entry :
       std::filesystem::recursive_directory_iterator(dir, ec))
    if (entry.is_regular_file(ec))
      total += entry.file_size(ec);
  return total;
}

} // namespace loom
