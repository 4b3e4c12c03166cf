//===- ModelDir.h - The executable a model directory keeps ------*- C++ -*-===//
//
// A model directory (what `loom train` writes) keeps the executable that
// translates with it, DIR/translate.loomx, so that translating does not
// compile; one for a GPU architecture is DIR/translate.sm_90.loomx. A file
// is reused when its key matches: the config it was compiled from, the Loom
// release that compiled it, and its target (a CPU level this CPU runs, or
// the GPU architecture asked for). A stale or damaged file is rebuilt, with
// a notice saying why, and written back when the directory allows it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOM_MODELDIR_H
#define LOOM_TOOLS_LOOM_MODELDIR_H

#include "tools/loom/Sessions.h"

#include "api/Translator.h"
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
/// translating with `config` on `target`.
llvm::Expected<runtime::Executable>
compileTranslateExecutable(const TransformerConfig &config,
                           const CodeTarget &target);

/// Why `exe` cannot serve as the translate executable of `config` for
/// `target` (on this machine, for a CPU), or an empty string when it can.
std::string staleReason(const runtime::Executable &exe,
                        const TransformerConfig &config,
                        const CodeTarget &target);

/// The file of a model directory that keeps the translate executable for
/// `target`: translate.loomx for the native CPU, translate.<arch>.loomx.
std::string translateExecutableName(const CodeTarget &target);

/// The directory's translate executable for `target` when it is current
/// for `config`; otherwise a new one, saved there when possible. Notices go
/// to stderr, prefixed with `command` ("loom translate").
llvm::Expected<std::shared_ptr<const runtime::Program>>
cachedTranslateProgram(const std::string &dir, const TransformerConfig &config,
                       llvm::StringRef command,
                       const CodeTarget &target = CodeTarget());

/// The translator of model directory `dir`, as `loom translate` and `loom
/// serve` open it: the device `opening` names first (a machine without it
/// says so before anything compiles), the decoder for that device and
/// `precision` (cachedTranslateProgram, notices prefixed with `command`),
/// one device per worker, and the weights (`opening.weights`, else the
/// directory's).
llvm::Expected<std::unique_ptr<Translator>>
openModelTranslator(const std::string &dir, const TranslatorOptions &opening,
                    const std::string &precision, llvm::StringRef command);

/// Compiles the translate executable of `config` and writes it to
/// DIR/translate.loomx.
llvm::Error writeTranslateExecutable(const std::string &dir,
                                     const TransformerConfig &config);

} // namespace loom::cli

#endif // LOOM_TOOLS_LOOM_MODELDIR_H
