//===- Executable.cpp - Loading and saving compiled executables -----------===//

#include "runtime/Executable.h"

#include "abi/CpuFeatures.h"
#include "runtime/AtomicFile.h"
#include "runtime/ExecutableValidation.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace loom {
namespace {

using runtime::Buffer;
using runtime::EntryPoint;
using runtime::Kernel;
using runtime::Step;

std::string quoted(const std::string &name) { return "'" + name + "'"; }

using runtime::describeBuffer;
using runtime::describeEntry;
using runtime::describeKernel;

/// A malformed executable: the only kind of failure validation reports.
Status corrupt(std::string message) {
  return Status::failure(std::move(message), ErrorCode::Corrupt);
}

std::string hex(uint64_t value) {
  std::ostringstream os;
  os << "0x" << std::hex << value;
  return os.str();
}

int64_t elementSize(Buffer::DType dtype) {
  std::optional<DType> known = dtypeOfWire(dtype);
  return known ? dtypeSize(*known) : 0;
}

/// The bytes a fully static shape of `dtype` needs, or nothing when a dim is
/// symbolic or the size overflows int64 (no real buffer is that large, so
/// the caller treats it as a mismatch).
std::optional<int64_t> staticBytes(const Buffer &buffer) {
  int64_t bytes = elementSize(buffer.dtype());
  for (const runtime::Dim &dim : buffer.shape()) {
    if (!dim.has_size())
      return std::nullopt;
    if (dim.size() != 0 &&
        bytes > std::numeric_limits<int64_t>::max() / dim.size())
      return std::nullopt;
    bytes *= dim.size();
  }
  return bytes;
}

Status validateKernels(const Executable &exe) {
  std::set<std::string> names;
  for (int k = 0; k < exe.kernels_size(); ++k) {
    const Kernel &kernel = exe.kernels(k);
    std::string where = describeKernel(exe, k);
    if (kernel.name().empty())
      return corrupt(where + " has no name");
    if (!names.insert(kernel.name()).second)
      return corrupt(where + ": duplicate kernel name " +
                     quoted(kernel.name()));
    if (kernel.symbol().empty())
      return corrupt(where + " has no symbol");
    if (!Kernel::Kind_IsValid(kernel.kind()) ||
        kernel.kind() == Kernel::KIND_UNSPECIFIED)
      return corrupt(where + " has unknown kind " +
                     std::to_string(kernel.kind()));
    if (kernel.num_args() < 0)
      return corrupt(where + " takes a negative number of arguments (" +
                     std::to_string(kernel.num_args()) + ")");
    // How a GPU launches it: exactly the generated kernels of a CUDA
    // executable say, and a device launches nothing it cannot size.
    bool gpuKernel =
        exe.target() == Executable::CUDA && kernel.kind() == Kernel::GENERATED;
    if (kernel.has_cuda_launch() != gpuKernel)
      return corrupt(where + (gpuKernel
                                  ? " is a generated kernel of a CUDA "
                                    "executable without a cuda_launch"
                                  : " has a cuda_launch, which only generated "
                                    "kernels of a CUDA executable have"));
    if (gpuKernel) {
      const runtime::CudaLaunch &launch = kernel.cuda_launch();
      if (!runtime::CudaLaunch::Shape_IsValid(launch.shape()) ||
          launch.shape() == runtime::CudaLaunch::SHAPE_UNSPECIFIED)
        return corrupt(where + " has unknown launch shape " +
                       std::to_string(launch.shape()));
      int32_t threads = launch.block_threads();
      if (threads < 32 || threads > 1024 || threads % 32 != 0)
        return corrupt(where + " launches blocks of " +
                       std::to_string(threads) +
                       " threads; a block has a multiple of 32 threads, from "
                       "32 to 1024");
    }
  }
  return Status::success();
}

Status validateBuffer(const Executable &exe, int b) {
  const Buffer &buffer = exe.buffers(b);
  // Messages are built only for a refusal.
  auto where = [&] { return describeBuffer(exe, b); };
  if (!Buffer::Role_IsValid(buffer.role()) ||
      buffer.role() == Buffer::ROLE_UNSPECIFIED)
    return corrupt(where() + " has unknown role " +
                   std::to_string(buffer.role()));
  if (!Buffer::DType_IsValid(buffer.dtype()) ||
      buffer.dtype() == Buffer::DTYPE_UNSPECIFIED)
    return corrupt(where() + " has unknown dtype " +
                   std::to_string(buffer.dtype()));
  for (int d = 0; d < buffer.shape_size(); ++d) {
    const runtime::Dim &dim = buffer.shape(d);
    auto dimWhere = [&] { return where() + ": dim " + std::to_string(d); };
    if (dim.has_size() && dim.size() < 0)
      return corrupt(dimWhere() + " has negative size " +
                     std::to_string(dim.size()));
    if (dim.has_poly()) {
      if (dim.poly().terms_size() == 0)
        return corrupt(dimWhere() + " is an empty polynomial");
      for (const runtime::Monomial &term : dim.poly().terms())
        for (int32_t symbol : term.symbols())
          if (symbol < 0 || symbol >= exe.symbols_size())
            return corrupt(dimWhere() + " refers to symbol " +
                           std::to_string(symbol) + ", but " +
                           std::to_string(exe.symbols_size()) +
                           " symbols exist");
    }
    if (!dim.has_size() && !dim.has_poly())
      return corrupt(dimWhere() + " has neither a size nor a polynomial");
  }

  bool isTemporary = buffer.role() == Buffer::TEMPORARY;
  bool hasSlice = buffer.has_arena_offset() || buffer.has_max_bytes();
  if (isTemporary) {
    if (!buffer.has_arena_offset() || !buffer.has_max_bytes())
      return corrupt(where() + " is a temporary without an arena slice");
    if (buffer.arena_offset() < 0)
      return corrupt(where() + " has negative arena_offset " +
                     std::to_string(buffer.arena_offset()));
    // The arena itself is aligned; the kernels may assume its slices are.
    bool cuda = exe.target() == Executable::CUDA;
    int64_t alignment =
        cuda ? exe.cuda_target().alignment() : exe.cpu_target().alignment();
    if (alignment > 0 && buffer.arena_offset() % alignment != 0)
      return corrupt(where() + " starts at arena byte " +
                     std::to_string(buffer.arena_offset()) +
                     ", not a multiple of the " +
                     (cuda ? "cuda_target" : "cpu_target") + " alignment " +
                     std::to_string(alignment));
    if (buffer.max_bytes() < 0)
      return corrupt(where() + " has negative max_bytes " +
                     std::to_string(buffer.max_bytes()));
    std::optional<int64_t> needed = staticBytes(buffer);
    if (needed && *needed > buffer.max_bytes())
      return corrupt(where() + " needs " + std::to_string(*needed) +
                     " bytes but its slice holds " +
                     std::to_string(buffer.max_bytes()));
  } else if (hasSlice) {
    // Persistent buffers are allocated by the runtime, not carved from an
    // arena; a slice here means the writer and the reader disagree.
    return corrupt(where() + " is persistent but has an arena slice");
  }

  if (buffer.has_view_of()) {
    if (buffer.view_of() < 0 || buffer.view_of() >= exe.buffers_size())
      return corrupt(where() + " is a view of buffer " +
                     std::to_string(buffer.view_of()) + ", but " +
                     std::to_string(exe.buffers_size()) + " buffers exist");
    const Buffer &base = exe.buffers(buffer.view_of());
    if (base.role() == Buffer::TEMPORARY || base.has_view_of())
      return corrupt(where() + " is a view of " +
                     describeBuffer(exe, buffer.view_of()) +
                     ", which is not a persistent buffer of its own");
    if (isTemporary)
      return corrupt(where() + " is a temporary and a view");
    if (buffer.view_offset() < 0)
      return corrupt(where() + " has negative view_offset " +
                     std::to_string(buffer.view_offset()));
    // Kernels load whole elements: a view must start on one.
    if (buffer.view_offset() % elementSize(buffer.dtype()) != 0)
      return corrupt(
          where() + " starts at byte " + std::to_string(buffer.view_offset()) +
          " of the buffer it views, not a multiple of its " +
          std::to_string(elementSize(buffer.dtype())) + "-byte elements");
  }

  if (buffer.role() == Buffer::CONSTANT) {
    std::optional<int64_t> needed = staticBytes(buffer);
    if (!needed)
      return corrupt(where() +
                     " is a constant with a dynamic or oversized shape");
    if (static_cast<uint64_t>(*needed) != buffer.data().size())
      return corrupt(where() + " is a constant of " + std::to_string(*needed) +
                     " bytes but carries " +
                     std::to_string(buffer.data().size()) + " bytes of data");
  } else if (!buffer.data().empty()) {
    return corrupt(where() + " carries data but is not a constant");
  }
  return Status::success();
}

/// What a CPU executable records of the target its code was compiled for.
/// Whether this machine has the target's features is not asked here: that
/// is the CPU device's check when it loads the code (checkCpuTarget in
/// runtime/cpu/CpuFeatures.h), and validation needs no device.
Status validateCpuTarget(const Executable &exe) {
  if (exe.target() != Executable::CPU) {
    if (exe.has_cpu_target())
      return corrupt("an executable for " +
                     Executable::Target_Name(exe.target()) +
                     " with a cpu_target");
    return Status::success();
  }
  if (!exe.has_cpu_target())
    return corrupt(
        "a CPU executable without a cpu_target: the CPU its code was "
        "compiled for is unknown");
  const runtime::CpuTarget &target = exe.cpu_target();
  if (target.triple().empty())
    return corrupt("cpu_target has no triple");
  if (target.cpu().empty())
    return corrupt("cpu_target has no cpu");
  for (int f = 0; f < target.features_size(); ++f) {
    const std::string &feature = target.features(f);
    // An unknown name would be a feature no loader can check.
    if (!abi::isKnownCpuFeature(feature))
      return corrupt("cpu_target records CPU feature " + quoted(feature) +
                     ", which this runtime does not know");
    if (f > 0 && !(target.features(f - 1) < feature))
      return corrupt("cpu_target's features are not sorted and unique (" +
                     quoted(target.features(f - 1)) + " before " +
                     quoted(feature) + ")");
  }
  int32_t alignment = target.alignment();
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    return corrupt("cpu_target alignment " + std::to_string(alignment) +
                   " is not a positive power of two");
  return Status::success();
}

/// What a CUDA executable records of the GPU its code was compiled for.
/// Whether the GPU at hand can run it is the CUDA device's question.
Status validateCudaTarget(const Executable &exe) {
  if (exe.target() != Executable::CUDA) {
    if (exe.has_cuda_target())
      return corrupt("an executable for " +
                     Executable::Target_Name(exe.target()) +
                     " with a cuda_target");
    return Status::success();
  }
  if (!exe.has_cuda_target())
    return corrupt("a CUDA executable without a cuda_target: the GPU its "
                   "code was compiled for is unknown");
  const runtime::CudaTarget &target = exe.cuda_target();
  const std::string &arch = target.arch();
  bool archOk = arch.size() > 3 && arch.size() <= 8 &&
                arch.compare(0, 3, "sm_") == 0 &&
                std::all_of(arch.begin() + 3, arch.end(),
                            [](char c) { return c >= '0' && c <= '9'; });
  if (!archOk)
    return corrupt("cuda_target architecture " + quoted(arch) +
                   " is not of the form sm_<number>");
  // A cubin is an ELF file.
  if (exe.code().compare(0, 4,
                         "\x7f"
                         "ELF") != 0)
    return corrupt("the code of a CUDA executable is not a cubin (no ELF "
                   "header)");
  if (target.ptx().empty())
    return corrupt("cuda_target has no PTX");
  int32_t alignment = target.alignment();
  if (alignment < 16 || (alignment & (alignment - 1)) != 0)
    return corrupt("cuda_target alignment " + std::to_string(alignment) +
                   " is not a power of two of at least 16 (the widest "
                   "vector a kernel loads)");
  return Status::success();
}

Status validateBuffers(const Executable &exe) {
  std::set<std::string> names;
  for (int b = 0; b < exe.buffers_size(); ++b) {
    const std::string &name = exe.buffers(b).name();
    if (name.empty())
      return corrupt(describeBuffer(exe, b) + " has no name");
    if (!names.insert(name).second)
      return corrupt(describeBuffer(exe, b) + ": duplicate buffer name " +
                     quoted(name));
    LOOM_RETURN_IF_ERROR(validateBuffer(exe, b));
  }
  return Status::success();
}

/// Checks that `index` names a buffer, and if it is a temporary, that its
/// slice lies inside the arena of the entry point `e` that uses it. `where`
/// names the use; it is called only to report a problem, since a large
/// executable has thousands of uses.
template <typename Where>
Status checkBufferUse(const Executable &exe, int e, int index,
                      const Where &where) {
  if (index < 0 || index >= exe.buffers_size())
    return corrupt(where() + " refers to buffer " + std::to_string(index) +
                   ", but " + std::to_string(exe.buffers_size()) +
                   " buffers exist");
  const Buffer &buffer = exe.buffers(index);
  if (buffer.role() != Buffer::TEMPORARY)
    return Status::success();
  int64_t arena = exe.entry_points(e).arena_bytes();
  // Written so that offset + max_bytes cannot overflow.
  if (buffer.arena_offset() > arena ||
      buffer.max_bytes() > arena - buffer.arena_offset())
    return corrupt(describeBuffer(exe, index) + " occupies arena bytes [" +
                   std::to_string(buffer.arena_offset()) + ", " +
                   std::to_string(static_cast<uint64_t>(buffer.arena_offset()) +
                                  static_cast<uint64_t>(buffer.max_bytes())) +
                   "), outside the " + std::to_string(arena) +
                   "-byte arena of " + describeEntry(exe, e));
  return Status::success();
}

Status validateEntryPoint(const Executable &exe, int e) {
  const EntryPoint &entry = exe.entry_points(e);
  auto where = [&] { return describeEntry(exe, e); };
  if (entry.arena_bytes() < 0)
    return corrupt(where() + " has negative arena_bytes " +
                   std::to_string(entry.arena_bytes()));
  for (int i = 0; i < entry.inputs_size(); ++i)
    LOOM_RETURN_IF_ERROR(checkBufferUse(exe, e, entry.inputs(i), [&] {
      return where() + ": input " + std::to_string(i);
    }));
  for (int i = 0; i < entry.outputs_size(); ++i)
    LOOM_RETURN_IF_ERROR(checkBufferUse(exe, e, entry.outputs(i), [&] {
      return where() + ": output " + std::to_string(i);
    }));
  for (int s = 0; s < entry.steps_size(); ++s) {
    const Step &step = entry.steps(s);
    auto stepWhere = [&] {
      return "step " + std::to_string(s) + " of " + quoted(entry.name());
    };
    if (step.kernel() < 0 || step.kernel() >= exe.kernels_size())
      return corrupt(stepWhere() + " calls kernel " +
                     std::to_string(step.kernel()) + ", but " +
                     std::to_string(exe.kernels_size()) + " kernels exist");
    const Kernel &kernel = exe.kernels(step.kernel());
    if (step.args_size() != kernel.num_args())
      return corrupt(stepWhere() + " calls " + quoted(kernel.name()) +
                     " with " + std::to_string(step.args_size()) +
                     " arguments, it takes " +
                     std::to_string(kernel.num_args()));
    for (int a = 0; a < step.args_size(); ++a)
      LOOM_RETURN_IF_ERROR(checkBufferUse(exe, e, step.args(a), [&] {
        return stepWhere() + ": argument " + std::to_string(a);
      }));
  }
  return Status::success();
}

} // namespace

uint64_t fnv1a64(const std::string &bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

Status validateExecutable(const Executable &exe) {
  // Version first: a file from another version may mean anything below.
  if (exe.format_version() == 0)
    return corrupt("not a Loom executable: it has no format version");
  if (exe.format_version() != kFormatVersion)
    return corrupt("format version " + std::to_string(exe.format_version()) +
                   ", this runtime reads " + std::to_string(kFormatVersion));
  // The checksum next, so a corrupt file is reported as corrupt rather than
  // as whatever field the corruption happened to hit.
  uint64_t checksum = fnv1a64(exe.code());
  if (checksum != exe.code_checksum())
    return corrupt("code checksum mismatch: the code hashes to " +
                   hex(checksum) + " but the file records " +
                   hex(exe.code_checksum()) + "; the file is corrupt");
  if (!Executable::Target_IsValid(exe.target()) ||
      exe.target() == Executable::TARGET_UNSPECIFIED)
    return corrupt("unknown target " + std::to_string(exe.target()));
  LOOM_RETURN_IF_ERROR(validateCpuTarget(exe));
  LOOM_RETURN_IF_ERROR(validateCudaTarget(exe));
  LOOM_RETURN_IF_ERROR(validateKernels(exe));
  // After the targets, whose alignment the temporaries are checked for.
  LOOM_RETURN_IF_ERROR(validateBuffers(exe));
  std::set<std::string> names;
  for (int e = 0; e < exe.entry_points_size(); ++e) {
    const std::string &name = exe.entry_points(e).name();
    if (name.empty())
      return corrupt(describeEntry(exe, e) + " has no name");
    if (!names.insert(name).second)
      return corrupt(describeEntry(exe, e) + ": duplicate entry point name " +
                     quoted(name));
    LOOM_RETURN_IF_ERROR(validateEntryPoint(exe, e));
  }
  // Every index is in range and every enum known: what the parts mean.
  return runtime::validateSemantics(exe);
}

namespace {
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'E', 'X', 'E', '\n'};
constexpr size_t kHeaderBytes = 24;

void appendU64(std::string &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t readU64(const std::string &bytes, size_t at) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i)
    value |= uint64_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}
} // namespace

std::string executableFileBytes(const std::string &payload) {
  std::string bytes(kMagic, sizeof kMagic);
  appendU64(bytes, payload.size());
  appendU64(bytes, fnv1a64(payload));
  return bytes + payload;
}

ErrorOr<Executable> loadExecutable(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return ErrorOr<Executable>::failure(
        "cannot open '" + path + "': " + std::strerror(errno),
        errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return ErrorOr<Executable>::failure("cannot read '" + path + "'",
                                        ErrorCode::Io);
  return parseExecutableFile(contents.str(), "'" + path + "'");
}

ErrorOr<Executable> parseExecutableFile(const std::string &bytes,
                                        const std::string &name) {
  auto refuse = [&](const std::string &why) {
    return ErrorOr<Executable>::failure(name + ": " + why, ErrorCode::Corrupt);
  };
  if (bytes.size() < kHeaderBytes ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return refuse("not a Loom executable: it does not start with the "
                  "executable header");
  uint64_t length = readU64(bytes, 8);
  if (length != bytes.size() - kHeaderBytes)
    return refuse("truncated or padded: the header promises " +
                  std::to_string(length) + " bytes of content, the file has " +
                  std::to_string(bytes.size() - kHeaderBytes));
  std::string payload = bytes.substr(kHeaderBytes);
  if (fnv1a64(payload) != readU64(bytes, 16))
    return refuse("checksum mismatch: the content hashes to " +
                  hex(fnv1a64(payload)) + " but the header records " +
                  hex(readU64(bytes, 16)) + "; the file is corrupt");
  Executable exe;
  if (!exe.ParseFromString(payload))
    return refuse("not a Loom executable: it does not parse as a "
                  "loom.runtime.Executable (truncated or not an executable)");
  if (Status valid = validateExecutable(exe); !valid.ok())
    return valid.withContext(name);
  return exe;
}

Status saveExecutable(const std::string &path, const Executable &executable) {
  // Refusing here keeps a buggy writer from producing a file that every
  // reader would refuse later, far from the bug.
  LOOM_RETURN_IF_ERROR(
      validateExecutable(executable).withContext("cannot save '" + path + "'"));
  std::string bytes;
  // Protobuf refuses a message of 2 GiB or more: too large an executable.
  if (!executable.SerializeToString(&bytes))
    return Status::failure("cannot save '" + path + "': serialization failed",
                           ErrorCode::InvalidArgument);

  std::string file = executableFileBytes(bytes);
  return writeFileAtomically(path, {{file.data(), file.size()}});
}

} // namespace loom
