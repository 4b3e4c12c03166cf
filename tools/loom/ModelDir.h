//===- ModelDir.h - The executable a model directory keeps ------*- C++ -*-===//
//
// A model directory (what `loom train` writes) keeps the executable that
// translates with it, DIR/translate.loomx, so that translating does not
// compile. The file is reused when its key matches: the config it was
// compiled from, the Loom release that compiled it, and a target this CPU
// runs. A stale or damaged file is rebuilt, with a notice saying why, and
// written back when the directory allows it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_MODELDIR_H
#define LOOM_TOOLS_LOOM_MODELDIR_H

#include "frontend/Config.h"
#include "runtime/Program.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace loom::cli {

/// Sentences and beam the translate executable is planned for; larger
/// batches are decoded in parts (Translator::translate).
constexpr int64_t kTranslateBatch = 32;
constexpr int64_t kTranslateBeam = 4;

/// Compiles @encode and @decode_step (and the rest of the model) for
/// translating with `config` on `cpu` ("native" or a portable level).
llvm::Expected<runtime::Executable>
compileTranslateExecutable(const TransformerConfig &config,
                           llvm::StringRef cpu);

/// Why `exe` cannot serve as the translate executable of `config` on this
/// machine for `cpu`, or an empty string when it can.
std::string staleReason(const runtime::Executable &exe,
                        const TransformerConfig &config, llvm::StringRef cpu);

/// DIR/translate.loomx when it is current for `config` and the native CPU;
/// otherwise a new one, saved there when possible. Notices go to stderr,
/// prefixed with `command` ("loom translate").
llvm::Expected<std::shared_ptr<const runtime::Program>>
cachedTranslateProgram(const std::string &dir, const TransformerConfig &config,
                       llvm::StringRef command);

/// Compiles the translate executable of `config` and writes it to
/// DIR/translate.loomx.
llvm::Error writeTranslateExecutable(const std::string &dir,
                                     const TransformerConfig &config);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_MODELDIR_H
