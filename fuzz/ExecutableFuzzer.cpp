//===- ExecutableFuzzer.cpp - Fuzzing the executable loader and runner ----===//
//
// An input that starts with the executable magic is taken as a whole file,
// so that the header's length and checksum are fuzzed too. Any other input
// is taken as the payload (a serialized Executable) and given a correct
// header, so that mutations reach the parser, the validator and the
// runtime instead of dying at the checksum.
//
// An executable that loads is run: a Program, a Session on a one-thread CPU
// device, and one of its entry points (picked by the input's checksum)
// called with the smallest inputs its signature allows (batch 1, lengths 2
// to 4, ids below 8). LOOM_FUZZ_VERBOSE=1 prints how each input went.
//
// What may run is limited to what a compiler could have written, because a
// CPU executable carries machine code that the runtime loads and calls:
//   - the code must be, byte for byte, the code of one of the executables
//     committed as seeds (corpus/executable/seed-*.payload, read from the
//     source tree). The code checksum inside the payload keeps a mutated `code`
//     from loading, but libFuzzer learns compared values and could write the
//     matching checksum; mutated machine code must never be dlopen'ed.
//   - a generated kernel must be called with what its code was compiled
//     for: as many arguments of the same element types and ranks as in the
//     seed. The file cannot prove this to the runtime; everything else (the
//     shapes, the arena, views, library calls, sizes) is fair game.
// An executable outside these limits is only loaded and validated. One
// whose buffers would need more than kMemoryBudget bytes, which a real model
// may well need but a fuzzer has no time for, gets a session but no call.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "runtime/Device.h"
#include "runtime/Program.h"
#include "runtime/Session.h"

#include <dirent.h>
#include <fstream>
#include <google/protobuf/stubs/logging.h>
#include <map>
#include <set>
#include <sstream>

using namespace loom;
using namespace loom::runtime;
using loom::fuzz::fail;

namespace {

constexpr char kMagic[] = "LOOMEXE\n";
constexpr int64_t kMemoryBudget = 64 << 20;

/// What a seed's code was compiled for: per generated kernel symbol, the
/// element type and rank of each argument.
using Signature = std::vector<std::pair<int, int>>;
struct TrustedCode {
  std::string code;
  std::map<std::string, std::set<Signature>> kernels;
};

Signature signatureOf(const Executable &exe, const Step &step) {
  Signature signature;
  for (int b : step.args())
    signature.push_back({exe.buffers(b).dtype(), exe.buffers(b).shape_size()});
  return signature;
}

std::vector<TrustedCode> loadTrusted() {
  std::vector<TrustedCode> trusted;
  DIR *dir = ::opendir(LOOM_FUZZ_TRUSTED_DIR);
  if (!dir)
    fail("cannot open the seed executables in " LOOM_FUZZ_TRUSTED_DIR);
  while (dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, 5, "seed-") != 0 || name.size() < 8 ||
        name.substr(name.size() - 8) != ".payload")
      continue;
    std::ifstream in(std::string(LOOM_FUZZ_TRUSTED_DIR) + "/" + name,
                     std::ios::binary);
    std::ostringstream payload;
    payload << in.rdbuf();
    Executable exe;
    if (!exe.ParseFromString(payload.str()) || !validateExecutable(exe).ok())
      fail("the seed " + name + " is not a valid executable");
    TrustedCode code{exe.code(), {}};
    for (const EntryPoint &entry : exe.entry_points())
      for (const Step &step : entry.steps())
        if (exe.kernels(step.kernel()).kind() == Kernel::GENERATED)
          code.kernels[exe.kernels(step.kernel()).symbol()].insert(
              signatureOf(exe, step));
    trusted.push_back(std::move(code));
  }
  ::closedir(dir);
  if (trusted.empty())
    fail("no seed executable (seed-*.payload) in " LOOM_FUZZ_TRUSTED_DIR);
  return trusted;
}

/// Whether `exe` calls only code a seed carries, as that seed does.
bool runsTrustedCode(const Executable &exe) {
  static const std::vector<TrustedCode> trusted = loadTrusted();
  bool generated = false;
  for (const Kernel &kernel : exe.kernels())
    generated |= kernel.kind() == Kernel::GENERATED;
  if (!generated)
    return true; // nothing is loaded
  for (const TrustedCode &code : trusted) {
    if (code.code != exe.code())
      continue;
    for (const EntryPoint &entry : exe.entry_points())
      for (const Step &step : entry.steps()) {
        const Kernel &kernel = exe.kernels(step.kernel());
        if (kernel.kind() != Kernel::GENERATED)
          continue;
        auto known = code.kernels.find(kernel.symbol());
        if (known == code.kernels.end() ||
            !known->second.count(signatureOf(exe, step)))
          return false;
      }
    return true;
  }
  return false;
}

/// The size a call binds for each named size: batch 1, lengths 2 to 4.
std::vector<int64_t> smallSizes(const Executable &exe) {
  std::vector<int64_t> sizes;
  for (int s = 0; s < exe.symbols_size(); ++s)
    sizes.push_back(
        exe.symbols(s).find("batch") != std::string::npos ? 1 : 2 + s % 3);
  return sizes;
}

/// Bytes of `shape` x `dtype`, or -1 when a dim is negative or the total
/// exceeds the budget.
int64_t boundedBytes(const std::vector<int64_t> &shape, DType dtype) {
  int64_t bytes = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && bytes > kMemoryBudget / d)
      return -1;
    bytes *= d;
  }
  return bytes;
}

/// The inputs of `entry` for `sizes`, or nothing when they are too large.
std::optional<std::vector<Tensor>>
smallInputs(const Program &program, const Program::Entry &entry,
            const std::vector<int64_t> &sizes) {
  std::vector<Tensor> inputs;
  for (const Program::Value &value : entry.inputs) {
    ErrorOr<std::vector<int64_t>> shape = program.shapeOf(value.buffer, sizes);
    if (!shape || boundedBytes(*shape, value.dtype) < 0)
      return std::nullopt;
    ErrorOr<Tensor> t = Tensor::host(value.dtype, *shape);
    if (!t)
      return std::nullopt;
    int64_t n = t->numel();
    if (value.dtype == DType::I32) {
      for (int64_t i = 0; i < n; ++i)
        static_cast<int32_t *>(t->data())[i] = static_cast<int32_t>(2 + i % 6);
    } else if (value.dtype == DType::I64) {
      // Adam's step counts from 1; a seed or a position of 0 is valid.
      for (int64_t i = 0; i < n; ++i)
        static_cast<int64_t *>(t->data())[i] = value.name == "step" ? 1 : 0;
    }
    inputs.push_back(std::move(*t));
  }
  return inputs;
}

/// Whether everything a session of `program` allocates for `sizes` stays
/// within the budget.
bool fitsBudget(const Program &program, const std::vector<int64_t> &sizes) {
  const Executable &exe = program.executable();
  int64_t total = 0;
  auto add = [&](int64_t bytes) {
    if (bytes < 0 || bytes > kMemoryBudget - total)
      return false;
    total += bytes;
    return true;
  };
  for (const EntryPoint &entry : exe.entry_points())
    if (!add(entry.arena_bytes()))
      return false;
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const Buffer &buffer = exe.buffers(b);
    if (buffer.role() == Buffer::TEMPORARY)
      continue;
    ErrorOr<std::vector<int64_t>> shape = program.shapeOf(b, sizes);
    if (!shape || !add(boundedBytes(*shape, *dtypeOfWire(buffer.dtype()))))
      return false;
  }
  return true;
}

/// With LOOM_FUZZ_VERBOSE set, says how an input went: whether the seeds
/// run, and why a case stops where it does.
void note(const std::string &what) {
  static const bool verbose = std::getenv("LOOM_FUZZ_VERBOSE") != nullptr;
  if (verbose)
    std::fprintf(stderr, "%s\n", what.c_str());
}

/// Runs one entry point of `program`, picked by `pick`: the training entry
/// points of a whole model take milliseconds under the sanitizers, and one
/// entry per input keeps the fuzzer fast; mutations pick every entry.
void runEntry(std::shared_ptr<const Program> program, uint64_t pick) {
  static std::shared_ptr<Device> device = [] {
    ErrorOr<std::shared_ptr<Device>> cpu = openDevice("cpu", 1);
    if (!cpu)
      fail("no CPU device: " + cpu.error());
    return *cpu;
  }();
  if (program->entries().empty())
    return note("no entry points");
  const Program::Entry &entry =
      program->entries()[pick % program->entries().size()];
  // A session maps its state without touching it, so any size may be
  // placed; the budget applies to what a call writes.
  ErrorOr<std::unique_ptr<Session>> session = Session::create(program, device);
  if (!session) {
    if (session.error().empty())
      fail("a session refused without a message");
    return note("no session: " + session.error());
  }
  std::vector<int64_t> sizes = smallSizes(program->executable());
  if (!fitsBudget(*program, sizes))
    return note("over the memory budget");
  std::optional<std::vector<Tensor>> inputs =
      smallInputs(*program, entry, sizes);
  if (!inputs)
    return note("inputs of '" + entry.name + "' over the memory budget");
  std::vector<TensorRef> refs;
  for (const Tensor &t : *inputs)
    refs.push_back(t.ref());
  ErrorOr<std::vector<NamedTensor>> outputs = (*session)->run(entry.name, refs);
  if (!outputs && outputs.error().empty())
    fail("'" + entry.name + "' fails without a message");
  note(entry.name + ": " + (outputs ? "ran" : outputs.error()));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Protobuf logs every string field that is not UTF-8; the parse fails
  // and the loader says so, which is all that matters here.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (bytes.compare(0, sizeof kMagic - 1, kMagic) != 0)
    bytes = executableFileBytes(bytes);
  fuzz::MemFile file(bytes);
  ErrorOr<std::shared_ptr<const Program>> program = Program::load(file.path());
  if (!program) {
    if (program.error().empty() || program.code() == ErrorCode::Ok)
      fail("a refused executable without a message");
    note("refused: " + program.error());
    return 0;
  }
  if (!runsTrustedCode((*program)->executable())) {
    note("loaded, not run: code or kernel calls unlike the seeds'");
    return 0;
  }
  runEntry(*program, fnv1a64(bytes));
  return 0;
}
