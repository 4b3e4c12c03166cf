//===- Checkpoint.h - Training checkpoints on disk --------------*- C++ -*-===//
//
// A checkpoint is DIR/checkpoints/step-<step>.safetensors: every parameter
// and every Adam moment of a session, by name, plus string metadata saying
// where training stood (step, epoch, batch, seed, ...). It is written
// atomically (temporary file, fsync, rename), so a crash while saving leaves
// the previous checkpoints whole. Every tensor carries a CRC-32 that loading
// checks (runtime/Safetensors.h), and neither saving nor loading accepts a
// NaN or infinite value.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_API_TRAIN_CHECKPOINT_H
#define LOOM_API_TRAIN_CHECKPOINT_H

#include "runtime/Safetensors.h"
#include "runtime/Session.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace loom::train {

using Metadata = std::map<std::string, std::string>;

/// `value` as metadata holds it: digits enough to read back the same double.
std::string metadataNumber(double value);

/// DIR/checkpoints/step-<step>.safetensors.
std::string checkpointPath(const std::string &dir, int64_t step);

/// The run's checkpoints as (step, path), oldest first; none when
/// DIR/checkpoints does not exist.
ErrorOr<std::vector<std::pair<int64_t, std::string>>>
listCheckpoints(const std::string &dir);

/// Writes the model's whole state (parameters and optimizer moments), or
/// only its parameters, with `metadata`, atomically; refuses, writing
/// nothing, when a value is NaN or infinite.
Status saveState(runtime::Session &session, const std::string &path,
                 const Metadata &metadata, bool parametersOnly = false);

/// Copies a checkpoint that saveState wrote, read from `path`, into the
/// model's state: every tensor of the state must be there with its shape and
/// dtype, and finite.
Status loadState(runtime::Session &session, const SafeTensorFile &file,
                 const std::string &path);

/// Deletes step checkpoints older than the `keep` latest, except `protect`
/// (the best one). Returns the paths deleted.
ErrorOr<std::vector<std::string>>
pruneCheckpoints(const std::string &dir, int64_t keep, int64_t protect);

} // namespace loom::train

#endif // LOOM_API_TRAIN_CHECKPOINT_H
