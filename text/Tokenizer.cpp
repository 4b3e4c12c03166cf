//===- Tokenizer.cpp - SentencePiece tokenization -------------------------===//

#include "text/Tokenizer.h"

#include "text/SentencePieceShim.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <type_traits>

#ifndef LOOM_SENTENCEPIECE_SHIM_NAME
#define LOOM_SENTENCEPIECE_SHIM_NAME "libloom_sentencepiece.so"
#endif

// AddressSanitizer refuses RTLD_DEEPBIND (a deep-bound module would bypass
// its malloc). Under it the module gets a link namespace of its own, which
// keeps SentencePiece's protobuf apart just as well; the module frees what
// it allocates (SentencePieceShim.h), so two allocators do no harm.
#if defined(__SANITIZE_ADDRESS__)
#define LOOM_SPM_OWN_NAMESPACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_SPM_OWN_NAMESPACE 1
#endif
#endif

namespace loom::text {
namespace {

/// The module's entry points. Resolved once; the module is never closed,
/// because SentencePiece and its protobuf keep global state whose
/// destructors must not run while a Tokenizer might still be alive.
struct Library {
  decltype(&loom_spm_train) train = nullptr;
  decltype(&loom_spm_load) load = nullptr;
  decltype(&loom_spm_free) free = nullptr;
  decltype(&loom_spm_encode) encode = nullptr;
  decltype(&loom_spm_decode) decode = nullptr;
  decltype(&loom_spm_vocab_size) vocabSize = nullptr;
  decltype(&loom_spm_id_to_piece) idToPiece = nullptr;
  decltype(&loom_spm_free_buffer) freeBuffer = nullptr;

  /// Takes ownership of a message the module returned.
  std::string takeError(char *message) const {
    std::string result = message ? message : "";
    freeBuffer(message);
    return result;
  }
};

/// The directory of the running executable, or empty when unknown.
std::string executableDir() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    return "";
  std::string path(buffer, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

/// The directory of the binary this code was linked into (libloom.so when
/// a program embeds the translator), or empty when unknown.
std::string thisObjectDir() {
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void *>(&executableDir), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

/// Opens the module at `path` and resolves every entry point, or says why it
/// could not.
Status tryOpen(const std::string &path, Library &lib) {
  // LOCAL: SentencePiece's protobuf symbols must not become visible to
  // libprotobuf. DEEPBIND: SentencePiece must bind to its own protobuf, not
  // to the system libprotobuf already loaded. NOW: a missing symbol shows
  // here, not at the first call.
#ifdef LOOM_SPM_OWN_NAMESPACE
  void *handle = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
#else
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
  if (!handle) {
    const char *error = ::dlerror();
    std::string why = error ? error : "dlopen failed";
    // dlerror starts with the path, which the caller prints already.
    if (why.compare(0, path.size() + 2, path + ": ") == 0)
      why.erase(0, path.size() + 2);
    return Status::failure(why, ErrorCode::NotFound);
  }
  auto resolve = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        ::dlsym(handle, name));
    return fn != nullptr;
  };
  decltype(&loom_spm_abi_version) abiVersion = nullptr;
  if (!resolve(abiVersion, "loom_spm_abi_version") ||
      !resolve(lib.train, "loom_spm_train") ||
      !resolve(lib.load, "loom_spm_load") ||
      !resolve(lib.free, "loom_spm_free") ||
      !resolve(lib.encode, "loom_spm_encode") ||
      !resolve(lib.decode, "loom_spm_decode") ||
      !resolve(lib.vocabSize, "loom_spm_vocab_size") ||
      !resolve(lib.idToPiece, "loom_spm_id_to_piece") ||
      !resolve(lib.freeBuffer, "loom_spm_free_buffer")) {
    ::dlclose(handle);
    return Status::failure(
        "not a Loom SentencePiece module (missing entry points)",
        ErrorCode::Corrupt);
  }
  if (int32_t version = abiVersion(); version != LOOM_SPM_ABI_VERSION) {
    ::dlclose(handle);
    return Status::failure("interface version " + std::to_string(version) +
                               ", expected " +
                               std::to_string(LOOM_SPM_ABI_VERSION) +
                               " (a module of another build)",
                           ErrorCode::Unsupported);
  }
  return Status::success();
}

struct LoadedLibrary {
  Library lib;
  Status status;    // NotFound when no candidate loads
  std::string path; // where it was loaded from
};

const LoadedLibrary &library() {
  static const LoadedLibrary loaded = [] {
    LoadedLibrary result;
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("LOOM_SENTENCEPIECE_SHIM"); env && *env)
      candidates.push_back(env);
    // A translator folder keeps the module in lib/ beside the binary; an
    // installed prefix in lib/ beside bin/; a program that embeds libloom
    // finds it beside that library.
    std::string dir = executableDir();
    // A translator folder uses the module it ships and no other: one found
    // elsewhere (the build tree's) would hide that the folder lacks it, and
    // the folder would fail where it is copied to.
    std::error_code ec;
    bool shipped =
        !dir.empty() &&
        std::filesystem::exists(dir + "/translate.loomx", ec) &&
        std::filesystem::exists(dir + "/loom-translate", ec);
    if (!dir.empty())
      candidates.push_back(dir + "/lib/" LOOM_SENTENCEPIECE_SHIM_NAME);
    if (!dir.empty() && !shipped)
      candidates.push_back(dir + "/../lib/" LOOM_SENTENCEPIECE_SHIM_NAME);
    if (std::string own = thisObjectDir(); !own.empty() && !shipped)
      candidates.push_back(own + "/" LOOM_SENTENCEPIECE_SHIM_NAME);
#ifdef LOOM_SENTENCEPIECE_SHIM_BUILD_PATH
    if (!shipped)
      candidates.push_back(LOOM_SENTENCEPIECE_SHIM_BUILD_PATH);
#endif
    std::ostringstream tried;
    for (const std::string &path : candidates) {
      Status opened = tryOpen(path, result.lib);
      if (opened.ok()) {
        result.path = path;
        return result;
      }
      tried << "\n  " << path << ": " << opened.message();
    }
    result.status = Status::failure(
        "cannot load the SentencePiece module " +
            std::string(LOOM_SENTENCEPIECE_SHIM_NAME) +
            " (set LOOM_SENTENCEPIECE_SHIM to its path); tried:" + tried.str(),
        ErrorCode::NotFound);
    return result;
  }();
  return loaded;
}

} // namespace

struct Tokenizer::Model {
  Model(const Library *lib, LoomSpm *handle) : lib(lib), handle(handle) {}
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { lib->free(handle); }

  const Library *lib;
  LoomSpm *handle;
};

Status loadSentencePiece() { return library().status; }

ErrorOr<std::string> sentencePieceModulePath() {
  const LoadedLibrary &loaded = library();
  if (!loaded.status.ok())
    return loaded.status;
  return loaded.path;
}

ErrorOr<Tokenizer> Tokenizer::train(const std::vector<std::string> &files,
                                    const TokenizerTrainOptions &options) {
  const LoadedLibrary &loaded = library();
  if (!loaded.status.ok())
    return loaded.status;
  if (options.modelType != "unigram" && options.modelType != "bpe")
    return ErrorOr<Tokenizer>::failure("unknown tokenizer model type '" +
                                       options.modelType +
                                       "' (expected unigram or bpe)");
  // The four reserved ids plus at least one piece.
  if (options.vocabSize <= 4)
    return ErrorOr<Tokenizer>::failure(
        "tokenizer vocabulary size must exceed 4, got " +
        std::to_string(options.vocabSize));
  // SentencePiece answers a corpus without text in its own words (or, for
  // all-blank lines, crashes): say it in the user's.
  std::string names;
  bool anyText = false;
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
      return ErrorOr<Tokenizer>::failure("cannot open " + file);
    names += (names.empty() ? "" : ", ") + file;
    char chunk[1 << 16];
    while (!anyText && in.read(chunk, sizeof(chunk)).gcount() > 0)
      for (std::streamsize i = 0; !anyText && i < in.gcount(); ++i)
        anyText = !std::isspace(static_cast<unsigned char>(chunk[i]));
  }
  if (!anyText)
    return ErrorOr<Tokenizer>::failure(
        "no text to learn a vocabulary from: " + names +
            (files.size() == 1 ? " is" : " are") +
            " empty or only blank lines",
        ErrorCode::InvalidArgument);

  LoomSpmTrainOptions o{};
  o.vocab_size = options.vocabSize;
  o.model_type = options.modelType.c_str();
  o.character_coverage = options.characterCoverage;
  o.normalization_rule = options.normalization.c_str();
  o.input_sentence_size = options.inputSentenceSize;
  o.max_sentence_length = options.maxSentenceBytes;
  o.seed = options.seed;
  o.num_threads = options.threads;
  o.pad_id = kPad;
  o.unk_id = kUnk;
  o.bos_id = kBos;
  o.eos_id = kEos;
  o.verbose = options.verbose;

  std::vector<const char *> paths;
  for (const std::string &file : files)
    paths.push_back(file.c_str());
  char *model = nullptr;
  size_t modelSize = 0;
  if (char *error =
          loaded.lib.train(paths.data(), paths.size(), &o, &model, &modelSize)) {
    std::string message = loaded.lib.takeError(error);
    // "Vocabulary size too high (32). Please set it to a value <= 9.": the
    // text holds too few distinct pieces for the size asked.
    size_t at = message.find("Please set it to a value <= ");
    if (message.find("Vocabulary size too high") != std::string::npos &&
        at != std::string::npos) {
      std::string most = message.substr(at + 28);
      most = most.substr(0, most.find_first_not_of("0123456789"));
      return ErrorOr<Tokenizer>::failure(
          "the training text (" + names + ") is too small for a vocabulary "
          "of " + std::to_string(options.vocabSize) +
              " pieces: it holds at most " + most +
              " (give more text, or ask for a smaller vocabulary)",
          ErrorCode::InvalidArgument);
    }
    // "Vocabulary size is smaller than required_chars. 12 vs 15.": every
    // character of the text needs a piece of its own.
    at = message.find("smaller than required_chars. ");
    if (at != std::string::npos) {
      std::string rest = message.substr(at + 29);
      size_t vs = rest.find(" vs ");
      if (vs != std::string::npos) {
        std::string least = rest.substr(vs + 4);
        least = least.substr(0, least.find_first_not_of("0123456789"));
        return ErrorOr<Tokenizer>::failure(
            "the training text (" + names + ") needs a vocabulary of at "
            "least " + least + " pieces (one per character it holds, and " +
                std::to_string(kEos + 1) + " reserved ones); " +
                std::to_string(options.vocabSize) + " were asked for",
            ErrorCode::InvalidArgument);
      }
    }
    return ErrorOr<Tokenizer>::failure(message);
  }
  std::string bytes(model, modelSize);
  loaded.lib.freeBuffer(model);
  return load(bytes);
}

ErrorOr<Tokenizer> Tokenizer::load(const std::string &modelBytes) {
  const LoadedLibrary &loaded = library();
  if (!loaded.status.ok())
    return loaded.status;
  LoomSpm *handle = nullptr;
  if (char *error =
          loaded.lib.load(modelBytes.data(), modelBytes.size(), &handle))
    return ErrorOr<Tokenizer>::failure(loaded.lib.takeError(error));
  auto model = std::make_shared<const Model>(&loaded.lib, handle);
  int32_t size = loaded.lib.vocabSize(handle);
  // Every Loom component (padding masks, decoding) relies on these ids; a
  // model trained elsewhere with other ids would silently misbehave.
  struct Reserved {
    int32_t id;
    const char *piece;
  };
  Tokenizer tokenizer(model, modelBytes, size);
  if (size <= kEos)
    return ErrorOr<Tokenizer>::failure("tokenizer model has only " +
                                       std::to_string(size) + " pieces");
  for (Reserved r : {Reserved{kPad, "<pad>"}, Reserved{kUnk, "<unk>"},
                     Reserved{kBos, "<s>"}, Reserved{kEos, "</s>"}})
    if (std::string p = tokenizer.piece(r.id); p != r.piece)
      return ErrorOr<Tokenizer>::failure(
          "tokenizer model has '" + p + "' at id " + std::to_string(r.id) +
          ", expected '" + r.piece + "' (pad 0, unk 1, bos 2, eos 3)");
  return tokenizer;
}

ErrorOr<Tokenizer> Tokenizer::loadFile(const std::string &path) {
  // Asked first: reading a directory throws from inside the stream, and a
  // FIFO or a device could be read forever.
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return ErrorOr<Tokenizer>::failure(
        "cannot open " + path + ": " +
            (ec ? ec.message() : std::string("no such file")),
        ErrorCode::NotFound);
  if (!std::filesystem::is_regular_file(status))
    return ErrorOr<Tokenizer>::failure(path + " is not a regular file");
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxModelBytes)
    return ErrorOr<Tokenizer>::failure(
        path + ": " + (ec ? ec.message() : std::to_string(size) + " bytes") +
        "; a SentencePiece model has at most " +
        std::to_string(kMaxModelBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return ErrorOr<Tokenizer>::failure("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad())
    return ErrorOr<Tokenizer>::failure("error reading " + path);
  auto result = load(bytes);
  if (!result)
    return ErrorOr<Tokenizer>::failure(path + ": " + result.error());
  return result;
}

Status Tokenizer::saveFile(const std::string &path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::failure("cannot create " + path, ErrorCode::Io);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return Status::failure("error writing " + path, ErrorCode::Io);
  return Status::success();
}

ErrorOr<std::vector<int32_t>> Tokenizer::encode(const std::string &text) const {
  int32_t *ids = nullptr;
  size_t count = 0;
  if (char *error = model->lib->encode(model->handle, text.data(), text.size(),
                                       &ids, &count))
    return Status::failure("SentencePiece cannot encode: " +
                               model->lib->takeError(error),
                           ErrorCode::Internal);
  std::vector<int32_t> result(ids, ids + count);
  model->lib->freeBuffer(ids);
  return result;
}

ErrorOr<std::string> Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::vector<int32_t> valid(ids);
  for (int32_t &id : valid)
    if (id < 0 || id >= size)
      id = kUnk;
  char *text = nullptr;
  size_t length = 0;
  if (char *error = model->lib->decode(model->handle, valid.data(),
                                       valid.size(), &text, &length))
    return Status::failure("SentencePiece cannot decode: " +
                               model->lib->takeError(error),
                           ErrorCode::Internal);
  std::string result(text, length);
  model->lib->freeBuffer(text);
  return result;
}

std::string Tokenizer::piece(int32_t id) const {
  char *text = nullptr;
  size_t length = 0;
  if (id < 0 || id >= size)
    return "";
  if (char *error = model->lib->idToPiece(model->handle, id, &text, &length)) {
    model->lib->takeError(error);
    return "";
  }
  std::string result(text, length);
  model->lib->freeBuffer(text);
  return result;
}

} // namespace loom::text
