//===- TranslatorFolder.h - Writing a folder that translates ----*- C++ -*-===//
//
// `loom export` ships a model as a folder that translates without the
// compiler:
//
//   OUT/loom-translate                 the runtime-only translator binary
//   OUT/loom-serve                     the runtime-only server (serve/)
//   OUT/lib/<the tokenizer module>     the SentencePiece module it opens
//   OUT/translate.loomx                @encode/@decode_step for its target
//   OUT/model.safetensors              the parameters
//   OUT/spm.model, OUT/config.pbtxt    the vocabulary and the config
//
// Everything is checked before anything is written (the weights against
// the executable, header and values; the vocabulary loaded), and every file
// is written atomically, so a refused export leaves OUT as it was. OUT must
// be new, empty or an earlier export: never a model directory or another
// folder whose files the export would mix with its own.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRANSLATORFOLDER_H
#define LOOM_API_TRANSLATORFOLDER_H

#include "runtime/Program.h"

#include <cstdint>
#include <string>

namespace loom {

/// What goes into a translator folder, by where it is now.
struct TranslatorFolderParts {
  /// The decoder, compiled for where the folder will run.
  const runtime::Program *program = nullptr;
  std::string weights;    // safetensors
  std::string vocabulary; // spm.model
  std::string config;     // config.pbtxt
  /// loom-translate, loom-serve and the tokenizer module they open.
  std::string translator;
  std::string server;
  std::string tokenizerModule;
};

/// Checks that `out` may be written (see above), that the parts belong
/// together and that the weights are whole and finite, then writes the
/// folder. Returns its size in bytes.
ErrorOr<uint64_t> writeTranslatorFolder(const std::string &out,
                                        const TranslatorFolderParts &parts);

/// The bytes of every file under `dir`.
uint64_t folderBytes(const std::string &dir);

} // namespace loom

#endif // LOOM_API_TRANSLATORFOLDER_H
