//===- Config.cpp - Transformer configurations ----------------------------===//

#include "frontend/Config.h"

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using llvm::formatv;

namespace loom {

namespace {

llvm::Error fieldError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Collects the parser's first error as `source:line:column: message`
/// (protobuf counts lines and columns from 0; editors count from 1).
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  FirstErrorCollector(llvm::StringRef text, std::string source)
      : text(text), source(std::move(source)) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (error.empty())
      error = formatv("{0}:{1}:{2}: {3}", source, line + 1,
                      fieldColumn(line, column, message) + 1, message);
  }

  std::string error;

private:
  /// For an unknown field the parser stands after its name; point at the
  /// name itself, where an editor should put the cursor.
  int fieldColumn(int line, int column, llvm::StringRef message) const {
    llvm::StringRef marker = "no field named \"";
    size_t at = message.find(marker);
    if (at == llvm::StringRef::npos)
      return column;
    llvm::StringRef name =
        message.drop_front(at + marker.size()).take_until([](char c) {
          return c == '"';
        });
    llvm::SmallVector<llvm::StringRef> lines;
    text.split(lines, '\n');
    if (line < 0 || line >= int(lines.size()) || name.empty())
      return column;
    size_t found = lines[line].take_front(column).rfind(name);
    return found == llvm::StringRef::npos ? column : int(found);
  }

  llvm::StringRef text;
  std::string source;
};

} // namespace

llvm::Error validateConfig(TransformerConfig &c) {
  auto positive = [](const char *field, int64_t value) -> llvm::Error {
    if (value > 0)
      return llvm::Error::success();
    return fieldError(formatv("{0} must be positive, got {1}", field, value));
  };
  for (auto [field, value] :
       {std::pair<const char *, int64_t>{"d_model", c.d_model()},
        {"heads", c.heads()},
        {"d_ff", c.d_ff()},
        {"encoder_layers", c.encoder_layers()},
        {"decoder_layers", c.decoder_layers()},
        {"src_vocab", c.src_vocab()},
        {"tgt_vocab", c.tgt_vocab()}})
    if (llvm::Error err = positive(field, value))
      return err;
  if (c.d_model() % 2)
    return fieldError(formatv("d_model must be even for the sinusoidal "
                              "positional encoding, got {0}",
                              c.d_model()));
  if (c.d_model() % c.heads())
    return fieldError(formatv("d_model ({0}) must be divisible by heads ({1})",
                              c.d_model(), c.heads()));
  // The vocabularies need room for the padding id 0 and at least one token.
  if (c.src_vocab() < 2 || c.tgt_vocab() < 2)
    return fieldError(formatv("{0} must be at least 2 (id 0 is padding), got "
                              "{1}",
                              c.src_vocab() < 2 ? "src_vocab" : "tgt_vocab",
                              std::min(c.src_vocab(), c.tgt_vocab())));
  if (!(c.dropout() >= 0.0 && c.dropout() < 1.0))
    return fieldError(
        formatv("dropout must be in [0, 1), got {0}", c.dropout()));
  if (!(c.label_smoothing() >= 0.0 && c.label_smoothing() < 1.0))
    return fieldError(formatv("label_smoothing must be in [0, 1), got {0}",
                              c.label_smoothing()));
  if (!c.has_layer_norm_eps())
    c.set_layer_norm_eps(kDefaultLayerNormEps);
  if (!(c.layer_norm_eps() > 0.0))
    return fieldError(formatv("layer_norm_eps must be positive, got {0}",
                              c.layer_norm_eps()));
  if (c.max_len() < 0)
    return fieldError(
        formatv("max_len must not be negative, got {0}", c.max_len()));
  if (c.max_len() == 0)
    c.set_max_len(kDefaultMaxLen);
  if (c.share_embeddings() && c.src_vocab() != c.tgt_vocab())
    return fieldError(formatv("share_embeddings needs src_vocab ({0}) equal "
                              "to tgt_vocab ({1})",
                              c.src_vocab(), c.tgt_vocab()));
  return llvm::Error::success();
}

llvm::Expected<TransformerConfig> parseConfig(llvm::StringRef text,
                                              llvm::StringRef source) {
  TransformerConfig config;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors(text, source.str());
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &config))
    return fieldError(errors.error.empty()
                          ? source + ": cannot parse the config"
                          : llvm::Twine(errors.error));
  if (llvm::Error err = validateConfig(config))
    return fieldError(source + ": " + llvm::toString(std::move(err)));
  return config;
}

llvm::Expected<TransformerConfig> loadConfig(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fieldError("cannot read config '" + path +
                      "': " + buffer.getError().message());
  return parseConfig((*buffer)->getBuffer(), path);
}

std::vector<std::string> presetNames() {
  return {"tiny", "small", "base", "big"};
}

llvm::Expected<TransformerConfig> presetConfig(llvm::StringRef name) {
  TransformerConfig c;
  if (name == "tiny") {
    // For tests: small enough for the reference interpreter.
    c.set_d_model(32);
    c.set_heads(2);
    c.set_d_ff(64);
    c.set_encoder_layers(2);
    c.set_decoder_layers(2);
    c.set_src_vocab(32);
    c.set_tgt_vocab(32);
  } else if (name == "small") {
    // For CPU runs on Multi30k: pre-norm trains stably without a long
    // warm-up at this size.
    c.set_d_model(256);
    c.set_heads(4);
    c.set_d_ff(1024);
    c.set_encoder_layers(3);
    c.set_decoder_layers(3);
    c.set_src_vocab(8000);
    c.set_tgt_vocab(8000);
    c.set_dropout(0.1);
    c.set_label_smoothing(0.1);
    c.set_norm(TransformerConfig::PRE);
    c.set_final_norm(true);
    c.set_share_embeddings(true);
    c.set_tie_output(true);
  } else if (name == "base" || name == "big") {
    // "Attention Is All You Need", table 3: a shared 37000-token BPE
    // vocabulary with tied embeddings and post-norm.
    bool big = name == "big";
    c.set_d_model(big ? 1024 : 512);
    c.set_heads(big ? 16 : 8);
    c.set_d_ff(big ? 4096 : 2048);
    c.set_encoder_layers(6);
    c.set_decoder_layers(6);
    c.set_src_vocab(37000);
    c.set_tgt_vocab(37000);
    c.set_dropout(big ? 0.3 : 0.1);
    c.set_label_smoothing(0.1);
    c.set_norm(TransformerConfig::POST);
    c.set_share_embeddings(true);
    c.set_tie_output(true);
  } else {
    return fieldError("unknown preset '" + name + "' (expected one of: " +
                      llvm::join(presetNames(), ", ") + ")");
  }
  if (llvm::Error err = validateConfig(c))
    return std::move(err);
  return c;
}

} // namespace loom
