//===- Common.cpp - What the loom subcommands share -----------------------===//

#include "tools/loom/Common.h"

#include "runtime/InputFile.h"
#include "runtime/Safetensors.h"
#include "text/LineReader.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

using llvm::formatv;

namespace loom::cli {

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Status toStatus(llvm::Error err) {
  if (!err)
    return Status::success();
  return Status::failure(llvm::toString(std::move(err)),
                         ErrorCode::InvalidArgument);
}

llvm::Error toError(const Status &status) {
  if (status.ok())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 status.message());
}

int fail(llvm::StringRef command, llvm::Error err) {
  // One write: llvm::errs() is unbuffered, and the ranks of an MPI job
  // share one stderr, where pieces of their lines interleaved.
  std::string line = "loom " + command.str() +
                     ": error: " + llvm::toString(std::move(err)) + "\n";
  llvm::errs() << line;
  llvm::errs().flush();
  return 1;
}

void ModelOptions::addTo(CLI::App *cmd) {
  auto *presetOpt =
      cmd->add_option("--preset", preset,
                      "A built-in model: " + llvm::join(presetNames(), ", "));
  auto *configOpt = cmd->add_option("--config", configPath,
                                    "A TransformerConfig in protobuf text");
  presetOpt->excludes(configOpt);
}

llvm::Expected<TransformerConfig> ModelOptions::load() const {
  if (!preset.empty())
    return presetConfig(preset);
  if (!configPath.empty())
    return loadConfig(configPath);
  return error("no model given: pass --preset NAME or --config FILE");
}

llvm::Error checkInputFile(const std::string &path, llvm::StringRef what) {
  return toError(loom::checkInputFile(path, what.str()));
}

llvm::Expected<std::string> programBesideLoom(llvm::StringRef name) {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  std::string path = (llvm::sys::path::parent_path(self) + "/" + name).str();
  if (!llvm::sys::fs::can_execute(path))
    return error("cannot find " + name + " beside '" + self +
                 "'; build or install it with loom");
  return path;
}

bool sameFile(const std::string &a, const std::string &b) {
  std::error_code ec;
  bool same = std::filesystem::equivalent(a, b, ec);
  if (!ec)
    return same;
  // One does not exist yet (two outputs of one command): the same path
  // once `.`, `..` and links are resolved.
  std::filesystem::path pa = std::filesystem::weakly_canonical(a, ec);
  if (ec)
    return false;
  std::filesystem::path pb = std::filesystem::weakly_canonical(b, ec);
  return !ec && pa == pb;
}

llvm::Error checkOutputFile(const std::string &path, llvm::StringRef what,
                            const std::vector<std::string> &inputs) {
  if (path.empty())
    return error(what + ": the path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(formatv("{0}: '{1}' is a directory; name a file", what, path));
  for (const std::string &input : inputs)
    if (!input.empty() && sameFile(path, input))
      return error(formatv("{0}: '{1}' is also an input ('{2}'); writing it "
                           "would destroy it",
                           what, path, input));
  return llvm::Error::success();
}

llvm::Error checkOutputDir(const std::string &path, llvm::StringRef what) {
  if (path.empty())
    return error(what + ": the path is empty");
  std::error_code ec;
  if (std::filesystem::exists(path, ec) &&
      !std::filesystem::is_directory(path, ec))
    return error(
        formatv("{0}: '{1}' exists and is not a directory", what, path));
  return llvm::Error::success();
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

llvm::Expected<std::vector<std::vector<int64_t>>>
readIdFile(const std::string &path, llvm::StringRef what, int64_t vocab,
           llvm::StringRef vocabField, int64_t maxLen) {
  if (llvm::Error err = checkInputFile(path, what))
    return std::move(err);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return error(formatv("cannot read {0} file '{1}': {2}", what, path,
                         std::strerror(errno)));
  std::vector<std::vector<int64_t>> sentences;
  text::LineReader reader(in);
  std::string line;
  while (reader.next(line)) {
    std::string where =
        formatv("{0} '{1}' line {2}", what, path, reader.lineNumber());
    if (reader.tooLong())
      return error(
          formatv("{0}: longer than {1} bytes", where, text::kMaxLineBytes));
    llvm::SmallVector<llvm::StringRef> tokens;
    llvm::SplitString(line, tokens, " \t\r\v\f");
    std::vector<int64_t> ids;
    for (llvm::StringRef token : tokens) {
      int64_t id;
      if (token.getAsInteger(10, id))
        return error(formatv("{0}: '{1}{2}' is not an integer token id", where,
                             token.take_front(40),
                             token.size() > 40 ? "..." : ""));
      if (id < 0 || id >= vocab)
        return error(formatv("{0}: id {1} is outside [0, {2}) ({3} is {2})",
                             where, id, vocab, vocabField));
      ids.push_back(id);
    }
    if (static_cast<int64_t>(ids.size()) > maxLen)
      return error(formatv("{0}: {1} tokens, more than max_len {2}", where,
                           ids.size(), maxLen));
    sentences.push_back(std::move(ids));
  }
  if (in.bad())
    return error(formatv("cannot read {0} file '{1}'", what, path));
  if (sentences.empty())
    return error(formatv("{0} file '{1}' holds no sentences", what, path));
  return sentences;
}

llvm::Expected<NamedTensors>
loadWeights(const std::string &path,
            const std::map<std::string, std::vector<int64_t>> &shapes) {
  auto file = loadSafetensors(path);
  if (!file) {
    // The loader's message usually names the file already.
    if (llvm::StringRef(file.error()).contains(path))
      return error("cannot load weights: " + file.error());
    return error(formatv("cannot load weights '{0}': {1}", path, file.error()));
  }
  for (const auto &[name, tensor] : file->tensors)
    if (!shapes.count(name))
      return error(formatv("weights '{0}' hold tensor '{1}', which is not a "
                           "parameter of this model",
                           path, name));
  NamedTensors params;
  for (const auto &[name, shape] : shapes) {
    auto it = file->tensors.find(name);
    if (it == file->tensors.end())
      return error(formatv("weights '{0}' have no tensor '{1}' (shape {2})",
                           path, name, shapeString(shape)));
    const SafeTensor &tensor = it->second;
    if (tensor.shape != shape)
      return error(formatv("tensor '{0}' in '{1}' has shape {2}, but the "
                           "model needs {3}",
                           name, path, shapeString(tensor.shape),
                           shapeString(shape)));
    if (tensor.dtype != "F32" && tensor.dtype != "F64" &&
        tensor.dtype != "F16" && tensor.dtype != "BF16")
      return error(formatv("tensor '{0}' in '{1}' has dtype {2}; parameters "
                           "must be floats",
                           name, path, tensor.dtype));
    // As runtime::loadParameters refuses them for the compiled backend.
    if (std::optional<NonFinite> bad = firstNonFinite(tensor))
      return error(formatv("weights '{0}': parameter '{1}' holds {2}", path,
                           name, bad->describe()));
    auto values = toDoubles(tensor);
    if (!values)
      return error(
          formatv("tensor '{0}' in '{1}': {2}", name, path, values.error()));
    for (double &v : *values) {
      v = roundToKind(v, DType::F32);
      if (!std::isfinite(v))
        return error(formatv("weights '{0}': parameter '{1}' holds a value "
                             "beyond the range of f32",
                             path, name));
    }
    params[name] = HostTensor(shape, DType::F32, std::move(*values));
  }
  return params;
}

llvm::Error saveWeights(const std::string &path, const NamedTensors &tensors) {
  SafeTensorFile file;
  for (const auto &[name, tensor] : tensors) {
    auto converted = fromDoubles(tensor.data, tensor.shape, "F32");
    if (!converted)
      return error(formatv("cannot store '{0}': {1}", name, converted.error()));
    file.tensors[name] = std::move(*converted);
  }
  return toError(
      saveSafetensors(path, file).withContext("cannot write '" + path + "'"));
}

llvm::Error checkBackend(const std::string &backend) {
  if (backend == "interpreter" || backend == "cpu")
    return llvm::Error::success();
  return error(formatv("unknown backend '{0}'; the backends are 'cpu' and "
                       "'interpreter'",
                       backend));
}

CLI::Option *addPrecisionOption(CLI::App *cmd, std::string &precision) {
  return cmd
      ->add_option("--precision", precision,
                   "What the linear layers multiply in on the CPU: fp32, "
                   "int8 (decoding: weights quantized per output channel "
                   "when loaded, rows per row at run time) or bf16 (a CPU "
                   "with AVX512-BF16; decoding, with the decoder's "
                   "attention caches in bf16 too, and for `compile` the "
                   "training step: bf16 factors, f32 sums, master weights "
                   "and Adam)")
      ->check(CLI::IsMember({"fp32", "int8", "bf16"}))
      ->capture_default_str();
}

CLI::Option *addTrainingPrecisionOption(CLI::App *cmd, std::string &precision) {
  return cmd
      ->add_option("--precision", precision,
                   "What the training step multiplies in: fp32, or bf16 "
                   "(mixed precision: bf16 factors, f32 sums, f32 master "
                   "weights and Adam; a CPU with AVX512-BF16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
}

llvm::Expected<int64_t> bucketBytes(double mb) {
  if (!(mb * (1 << 20) >= 4 && mb <= (1 << 20))) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", mb);
    return error(formatv("--bucket-mb must be between 4 bytes and 1 TiB "
                         "(1048576), got {0}",
                         given));
  }
  return int64_t(mb * (1 << 20));
}

} // namespace loom::cli
