//===- Tokenizer.h - SentencePiece tokenization -----------------*- C++ -*-===//
//
// Sentences become ids through a SentencePiece model that `loom train` trains
// on the training files (one joint vocabulary for both languages by default)
// and saves with the model, so translation and scoring tokenize exactly as
// training did. Ids 0-3 are reserved: pad 0, unk 1, bos 2, eos 3.
//
// SentencePiece is reached through a separately built module opened at run
// time (see SentencePieceShim.h for why). It is looked for, in order, at
// $LOOM_SENTENCEPIECE_SHIM, in lib/ and ../lib/ beside the executable (a
// translator folder, an installed prefix), beside the library this code is
// part of (a program embedding libloom), and where the build put it; when
// none loads, the error lists every place tried.
//
// A Tokenizer is cheap to copy (copies share the model) and its const
// methods may be called from several threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEXT_TOKENIZER_H
#define LOOM_TEXT_TOKENIZER_H

#include "abi/Error.h"
#include "abi/ModelAbi.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loom::text {

struct TokenizerTrainOptions {
  int32_t vocabSize = 8000;
  /// "unigram" or "bpe".
  std::string modelType = "unigram";
  /// 1.0 keeps every character seen (right for European languages); a lower
  /// value sends rare characters to unk.
  double characterCoverage = 1.0;
  /// SentencePiece's normalization ("nmt_nfkc" or "identity", ...).
  std::string normalization = "nmt_nfkc";
  /// Sentences sampled for training; 0 uses all of them.
  int64_t inputSentenceSize = 1000000;
  /// Sentences longer than this many bytes are left out of training.
  int32_t maxSentenceBytes = 4192;
  uint32_t seed = 1;
  int32_t threads = 1;
  /// SentencePiece's own progress log on stderr.
  bool verbose = false;
};

class Tokenizer {
public:
  static constexpr int32_t kPad = abi::kPadId;
  static constexpr int32_t kUnk = abi::kUnkId;
  static constexpr int32_t kBos = abi::kBosId;
  static constexpr int32_t kEos = abi::kEosId;

  /// Trains a model on the lines of `files` together (a joint vocabulary
  /// when they are both sides of a corpus).
  static ErrorOr<Tokenizer> train(const std::vector<std::string> &files,
                                  const TokenizerTrainOptions &options);
  /// Loads a serialized model, as modelBytes() returns it.
  static ErrorOr<Tokenizer> load(const std::string &modelBytes);
  /// A SentencePiece model of Loom's vocabularies is well under a MiB; the
  /// bound keeps a wrong file from being read whole.
  static constexpr uintmax_t kMaxModelBytes = uintmax_t(256) << 20;
  /// Loads a SentencePiece .model file: a regular file of at most
  /// kMaxModelBytes.
  static ErrorOr<Tokenizer> loadFile(const std::string &path);

  /// The ids of `text`, without bos or eos. SentencePiece fails only
  /// without a model, which a Tokenizer always has, or out of memory.
  ErrorOr<std::vector<int32_t>> encode(const std::string &text) const;
  /// The text of `ids`. Pad, bos and eos produce nothing; an id outside the
  /// vocabulary (a model whose output vocabulary is larger than this
  /// tokenizer's) decodes as unk rather than failing, so a translation is
  /// always printable.
  ErrorOr<std::string> decode(const std::vector<int32_t> &ids) const;
  /// The piece of one id ("▁the", "<unk>", ...), for diagnostics; empty for
  /// an id outside the vocabulary.
  std::string piece(int32_t id) const;

  int32_t vocabSize() const { return size; }
  /// The serialized model, to save with the trained weights.
  const std::string &modelBytes() const { return bytes; }
  /// Writes modelBytes() to `path` (a file that SentencePiece's own tools
  /// also read); fails with Io.
  Status saveFile(const std::string &path) const;

private:
  struct Model;
  Tokenizer(std::shared_ptr<const Model> model, std::string bytes, int32_t size)
      : model(std::move(model)), bytes(std::move(bytes)), size(size) {}

  std::shared_ptr<const Model> model;
  std::string bytes;
  int32_t size = 0;
};

/// Opens the SentencePiece module (once per process). Fails with NotFound,
/// naming every place tried, when it cannot be opened.
Status loadSentencePiece();

/// The file the SentencePiece module was loaded from, to ship beside a
/// translator.
ErrorOr<std::string> sentencePieceModulePath();

} // namespace loom::text

#endif // LOOM_TEXT_TOKENIZER_H
