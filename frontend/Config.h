//===- Config.h - Transformer configurations --------------------*- C++ -*-===//
//
// A `TransformerConfig` comes from protobuf text (`.pbtxt`) or from a preset
// (`tiny`, `small`, `base`, `big`). Every way in goes through
// `validateConfig`, which fills the defaults and rejects a config the model
// cannot be built from, naming the field.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTEND_CONFIG_H
#define LOOM_FRONTEND_CONFIG_H

#include "runtime/config.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace loom {

/// Default of `layer_norm_eps` when the config does not set it.
constexpr double kDefaultLayerNormEps = 1e-5;
/// `max_len` when the config leaves it 0.
constexpr int64_t kDefaultMaxLen = 256;

/// The largest sizes a config may ask for, each far above any published
/// Transformer's, so that a typo or a hostile file is refused by name
/// instead of overflowing a shape or exhausting memory later.
constexpr int64_t kMaxModelDim = int64_t(1) << 16;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxFeedForwardDim = int64_t(1) << 18;
constexpr int64_t kMaxLayers = 1024;
/// Token ids travel as int32 and as exact f32 values (label smoothing).
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxSequenceLength = int64_t(1) << 16;
/// 2^34 parameters: 64 GiB of f32 weights, 256 GiB with gradients and Adam
/// moments.
constexpr int64_t kMaxParameters = int64_t(1) << 34;
/// A config is a few hundred bytes; a larger file is not one.
constexpr int64_t kMaxConfigBytes = int64_t(1) << 20;

/// Fills defaults (layer_norm_eps, max_len) and checks `config`; the error
/// names the offending field and its value.
llvm::Error validateConfig(TransformerConfig &config);

/// Parses protobuf text; `source` names the text in messages (a file name).
/// A syntax error or unknown field is reported as `source:line:column: ...`.
llvm::Expected<TransformerConfig> parseConfig(llvm::StringRef text,
                                              llvm::StringRef source);

/// Reads and parses the file at `path`.
llvm::Expected<TransformerConfig> loadConfig(llvm::StringRef path);

/// The preset `name`, validated.
llvm::Expected<TransformerConfig> presetConfig(llvm::StringRef name);

/// The names `presetConfig` accepts.
std::vector<std::string> presetNames();

} // namespace loom

#endif // LOOM_FRONTEND_CONFIG_H
