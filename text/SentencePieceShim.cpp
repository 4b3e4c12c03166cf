//===- SentencePieceShim.cpp - C interface to SentencePiece ---------------===//
//
// The only Loom code that links SentencePiece; see SentencePieceShim.h for
// why it lives in a module of its own. It is compiled with hidden visibility
// so that the module exports nothing but the functions below, and no C++
// exception leaves it: each becomes an error message.
//
//===----------------------------------------------------------------------===//

#include "text/SentencePieceShim.h"

#include "text/LineReader.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#define LOOM_SPM_EXPORT extern "C" __attribute__((visibility("default")))

struct LoomSpm {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

char *copyBytes(const char *data, size_t size) {
  // One extra byte so that strings are also NUL-terminated.
  char *out = static_cast<char *>(std::malloc(size + 1));
  if (!out)
    return nullptr;
  if (size)
    std::memcpy(out, data, size);
  out[size] = '\0';
  return out;
}

// Handed out when not even the error message can be allocated, so that a
// failure never reads as success; loom_spm_free_buffer leaves it alone.
char kOutOfMemory[] = "out of memory";

char *errorMessage(const std::string &message) {
  char *out = copyBytes(message.data(), message.size());
  return out ? out : kOutOfMemory;
}

char *statusMessage(const char *what, const sentencepiece::util::Status &s) {
  return errorMessage(std::string(what) + ": " + s.ToString());
}

/// Feeds the training files line by line. SentencePiece's own file reader
/// takes a comma-separated list (so no commas in file names) and keeps a
/// trailing '\r'; reading the files here avoids both. Lines longer than
/// `maxBytes` are skipped here: SentencePiece would skip them too, but its
/// trainer crashes while logging that it does.
class FileSentenceIterator : public sentencepiece::SentenceIterator {
public:
  FileSentenceIterator(std::vector<std::string> files, size_t maxBytes)
      : files(std::move(files)), maxBytes(maxBytes) {
    Next();
  }

  bool done() const override { return finished; }
  const std::string &value() const override { return line; }
  sentencepiece::util::Status status() const override { return failure; }

  void Next() override {
    while (!finished) {
      if (reader && reader->next(line)) {
        if (reader->tooLong())
          continue;
        return;
      }
      if (in.is_open()) {
        if (in.bad()) {
          fail("error reading " + files[next - 1]);
          return;
        }
        in.close();
      }
      if (next == files.size()) {
        finished = true;
        return;
      }
      in.open(files[next], std::ios::binary);
      ++next;
      if (!in) {
        fail("cannot open " + files[next - 1]);
        return;
      }
      reader.emplace(in, maxBytes);
    }
  }

private:
  void fail(const std::string &message) {
    failure = sentencepiece::util::Status(
        sentencepiece::util::StatusCode::kNotFound, message);
    finished = true;
  }

  std::vector<std::string> files;
  size_t maxBytes;
  size_t next = 0;
  std::ifstream in;
  std::optional<loom::text::LineReader> reader;
  std::string line;
  bool finished = false;
  sentencepiece::util::Status failure;
};

} // namespace

LOOM_SPM_EXPORT int32_t loom_spm_abi_version(void) {
  return LOOM_SPM_ABI_VERSION;
}

LOOM_SPM_EXPORT char *loom_spm_train(const char *const *files, size_t num_files,
                                     const LoomSpmTrainOptions *options,
                                     char **model_bytes, size_t *model_size) {
  try {
    if (num_files == 0)
      return errorMessage("no training files");
    const LoomSpmTrainOptions &o = *options;
    std::unordered_map<std::string, std::string> args = {
        {"vocab_size", std::to_string(o.vocab_size)},
        {"model_type", o.model_type ? o.model_type : "unigram"},
        {"character_coverage", std::to_string(o.character_coverage)},
        {"normalization_rule_name",
         o.normalization_rule ? o.normalization_rule : "nmt_nfkc"},
        {"input_sentence_size", std::to_string(o.input_sentence_size)},
        {"shuffle_input_sentence", "true"},
        {"max_sentence_length", std::to_string(o.max_sentence_length)},
        {"num_threads", std::to_string(o.num_threads > 0 ? o.num_threads : 1)},
        {"pad_id", std::to_string(o.pad_id)},
        {"unk_id", std::to_string(o.unk_id)},
        {"bos_id", std::to_string(o.bos_id)},
        {"eos_id", std::to_string(o.eos_id)},
        // SentencePiece logs every step at INFO; warnings and errors stay.
        {"minloglevel", o.verbose ? "0" : "1"},
    };
    // The seed is process-wide state of SentencePiece; training is not
    // meant to run concurrently anyway.
    sentencepiece::SetRandomGeneratorSeed(o.seed);
    FileSentenceIterator sentences(
        std::vector<std::string>(files, files + num_files),
        o.max_sentence_length > 0 ? size_t(o.max_sentence_length)
                                  : loom::text::kMaxLineBytes);
    std::string serialized;
    auto status = sentencepiece::SentencePieceTrainer::Train(args, &sentences,
                                                             &serialized);
    if (!status.ok())
      return statusMessage("SentencePiece training failed", status);
    char *out = copyBytes(serialized.data(), serialized.size());
    if (!out)
      return errorMessage("out of memory");
    *model_bytes = out;
    *model_size = serialized.size();
    return nullptr;
  } catch (const std::exception &e) {
    return errorMessage(std::string("SentencePiece training failed: ") +
                        e.what());
  } catch (...) {
    return errorMessage("SentencePiece training failed");
  }
}

LOOM_SPM_EXPORT char *loom_spm_load(const char *bytes, size_t size,
                                    LoomSpm **model) {
  try {
    auto loaded = std::make_unique<LoomSpm>();
    auto status = loaded->processor.LoadFromSerializedProto(
        std::string_view(bytes, size));
    if (!status.ok())
      return statusMessage("cannot load SentencePiece model", status);
    *model = loaded.release();
    return nullptr;
  } catch (const std::exception &e) {
    return errorMessage(std::string("cannot load SentencePiece model: ") +
                        e.what());
  } catch (...) {
    return errorMessage("cannot load SentencePiece model");
  }
}

LOOM_SPM_EXPORT void loom_spm_free(LoomSpm *model) { delete model; }

LOOM_SPM_EXPORT char *loom_spm_encode(const LoomSpm *model, const char *text,
                                      size_t length, int32_t **ids,
                                      size_t *num_ids) {
  try {
    std::vector<int> pieces;
    auto status =
        model->processor.Encode(std::string_view(text, length), &pieces);
    if (!status.ok())
      return statusMessage("SentencePiece encoding failed", status);
    // At least one byte so that an empty result is not a NULL that reads
    // as an allocation failure.
    auto *out = static_cast<int32_t *>(
        std::malloc(std::max<size_t>(1, pieces.size()) * sizeof(int32_t)));
    if (!out)
      return errorMessage("out of memory");
    for (size_t i = 0; i < pieces.size(); ++i)
      out[i] = pieces[i];
    *ids = out;
    *num_ids = pieces.size();
    return nullptr;
  } catch (const std::exception &e) {
    return errorMessage(std::string("SentencePiece encoding failed: ") +
                        e.what());
  } catch (...) {
    return errorMessage("SentencePiece encoding failed");
  }
}

LOOM_SPM_EXPORT char *loom_spm_decode(const LoomSpm *model, const int32_t *ids,
                                      size_t num_ids, char **text,
                                      size_t *length) {
  try {
    int size = model->processor.GetPieceSize();
    std::vector<int> pieces(ids, ids + num_ids);
    // SentencePiece aborts the process on an id outside the vocabulary
    // instead of returning an error, so ids are checked here.
    for (size_t i = 0; i < num_ids; ++i)
      if (pieces[i] < 0 || pieces[i] >= size)
        return errorMessage("token id " + std::to_string(pieces[i]) +
                            " at position " + std::to_string(i) +
                            " is outside the vocabulary of " +
                            std::to_string(size));
    std::string decoded;
    auto status = model->processor.Decode(pieces, &decoded);
    if (!status.ok())
      return statusMessage("SentencePiece decoding failed", status);
    char *out = copyBytes(decoded.data(), decoded.size());
    if (!out)
      return errorMessage("out of memory");
    *text = out;
    *length = decoded.size();
    return nullptr;
  } catch (const std::exception &e) {
    return errorMessage(std::string("SentencePiece decoding failed: ") +
                        e.what());
  } catch (...) {
    return errorMessage("SentencePiece decoding failed");
  }
}

LOOM_SPM_EXPORT int32_t loom_spm_vocab_size(const LoomSpm *model) {
  return model->processor.GetPieceSize();
}

LOOM_SPM_EXPORT char *loom_spm_id_to_piece(const LoomSpm *model, int32_t id,
                                           char **piece, size_t *length) {
  try {
    if (id < 0 || id >= model->processor.GetPieceSize())
      return errorMessage("token id " + std::to_string(id) +
                          " is outside the vocabulary of " +
                          std::to_string(model->processor.GetPieceSize()));
    const std::string &p = model->processor.IdToPiece(id);
    char *out = copyBytes(p.data(), p.size());
    if (!out)
      return errorMessage("out of memory");
    *piece = out;
    *length = p.size();
    return nullptr;
  } catch (const std::exception &e) {
    return errorMessage(e.what());
  } catch (...) {
    return errorMessage("SentencePiece failed");
  }
}

LOOM_SPM_EXPORT void loom_spm_free_buffer(void *buffer) {
  if (buffer != kOutOfMemory)
    std::free(buffer);
}
