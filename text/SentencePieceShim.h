//===- SentencePieceShim.h - C interface to SentencePiece -------*- C++ -*-===//
//
// Debian's libsentencepiece bundles its own copy of protobuf-lite and exports
// its symbols. A process that also links the system libprotobuf (every Loom
// binary does) crashes at load, because libprotobuf's static initializers bind
// to SentencePiece's older copy. So no Loom binary links SentencePiece: it is
// wrapped in a separate module (loom_sentencepiece) that Tokenizer.cpp opens
// with dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so that SentencePiece binds to its
// own protobuf and nothing else binds to it.
//
// The module exports only the C functions below. Every function that can
// fail returns NULL on success and otherwise an error message that the caller
// releases with loom_spm_free_buffer; outputs are written only on success.
// Strings and arrays handed out are released the same way: under
// RTLD_DEEPBIND the module may bind to another allocator than the program
// (one the program interposes), so memory is freed where it was allocated.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_SENTENCEPIECESHIM_H
#define LOOM_TEXT_SENTENCEPIECESHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever a signature or LoomSpmTrainOptions changes, so that a
/// module from another build is refused instead of misread.
#define LOOM_SPM_ABI_VERSION 1

/// A loaded model; opaque to callers.
typedef struct LoomSpm LoomSpm;

typedef struct LoomSpmTrainOptions {
  int32_t vocab_size;
  /// "unigram" or "bpe".
  const char *model_type;
  /// The fraction of characters the vocabulary must cover; the rest map to
  /// unk.
  double character_coverage;
  /// SentencePiece's normalization rule ("nmt_nfkc", "identity", ...).
  const char *normalization_rule;
  /// Sentences sampled from the input for training; 0 uses every sentence.
  int64_t input_sentence_size;
  /// Longer sentences (in bytes) are left out of training.
  int32_t max_sentence_length;
  /// Seeds SentencePiece's random generator (sentence sampling).
  uint32_t seed;
  int32_t num_threads;
  int32_t pad_id, unk_id, bos_id, eos_id;
  /// Print SentencePiece's progress log on stderr.
  int32_t verbose;
} LoomSpmTrainOptions;

/// Returns LOOM_SPM_ABI_VERSION as the module was built.
int32_t loom_spm_abi_version(void);

/// Trains a model on the lines of `files` (UTF-8, one sentence per line; a
/// trailing '\r' is dropped) and returns the serialized model.
char *loom_spm_train(const char *const *files, size_t num_files,
                     const LoomSpmTrainOptions *options, char **model_bytes,
                     size_t *model_size);

/// Loads a serialized model.
char *loom_spm_load(const char *bytes, size_t size, LoomSpm **model);

void loom_spm_free(LoomSpm *model);

/// Encodes UTF-8 text to piece ids (no bos/eos added).
char *loom_spm_encode(const LoomSpm *model, const char *text, size_t length,
                      int32_t **ids, size_t *num_ids);

/// Decodes piece ids to UTF-8 text; control ids (pad, bos, eos) vanish.
char *loom_spm_decode(const LoomSpm *model, const int32_t *ids, size_t num_ids,
                      char **text, size_t *length);

int32_t loom_spm_vocab_size(const LoomSpm *model);

/// The piece of `id`.
char *loom_spm_id_to_piece(const LoomSpm *model, int32_t id, char **piece,
                           size_t *length);

/// Releases anything the module handed out except models.
void loom_spm_free_buffer(void *buffer);

#ifdef __cplusplus
}
#endif

#endif // LOOM_TEXT_SENTENCEPIECESHIM_H
