//===- Executable.h - Loading and saving compiled executables ---*- C++ -*-===//
//
// An Executable (runtime/executable.proto) is everything the runtime needs to
// run a compiled model: its buffers, its kernels and their code, and the entry
// points that call them. Codegen writes it; the runtime trusts nothing in it
// but the kernels' machine code. The loader checks every index, size, slice
// and checksum before anything uses the file, then what the parts mean (the
// roles, shapes and signatures of ExecutableValidation.h), and reports the
// first problem as a message that names the buffer, kernel, entry point or
// step at fault, so a corrupt, mismatched or crafted file is refused instead
// of crashing a kernel later.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_EXECUTABLE_H
#define LOOM_RUNTIME_EXECUTABLE_H

#include "abi/DType.h"
#include "abi/Error.h"
#include "runtime/executable.pb.h"

#include <cstdint>
#include <optional>
#include <string>

namespace loom {

using runtime::Executable;

/// The element type a buffer's wire enum stands for; nothing for
/// DTYPE_UNSPECIFIED or a value this runtime does not know.
inline std::optional<DType> dtypeOfWire(int wire) {
  switch (wire) {
  case runtime::Buffer::F32:
    return DType::F32;
  case runtime::Buffer::F16:
    return DType::F16;
  case runtime::Buffer::BF16:
    return DType::BF16;
  case runtime::Buffer::F64:
    return DType::F64;
  case runtime::Buffer::I32:
    return DType::I32;
  case runtime::Buffer::I64:
    return DType::I64;
  case runtime::Buffer::I1:
    return DType::I1;
  default:
    return std::nullopt;
  }
}

/// The wire enum of `dtype`.
inline runtime::Buffer::DType wireOfDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return runtime::Buffer::F32;
  case DType::F16:
    return runtime::Buffer::F16;
  case DType::BF16:
    return runtime::Buffer::BF16;
  case DType::F64:
    return runtime::Buffer::F64;
  case DType::I32:
    return runtime::Buffer::I32;
  case DType::I64:
    return runtime::Buffer::I64;
  case DType::I1:
    return runtime::Buffer::I1;
  }
  return runtime::Buffer::DTYPE_UNSPECIFIED;
}

/// The only format version this runtime reads. Bump it whenever a change to
/// executable.proto changes what an existing field means, or what a file
/// must carry, or the model ABI of an entry point (3: generated kernels
/// record their signature; 4: @decode_step takes [batch, beam] tokens and
/// per-sentence cross-attention K/V; 5: its self-attention caches are
/// position first, and attention calls carry keysPositionMajor).
constexpr uint32_t kFormatVersion = 5;

/// FNV-1a 64 of `bytes`, the checksum stored in Executable.code_checksum.
uint64_t fnv1a64(const std::string &bytes);

/// The bytes of an executable file holding `payload`, a serialized
/// Executable: the magic "LOOMEXE\n", the payload's length and its FNV-1a 64
/// (both little-endian 64-bit), then the payload. The header makes every
/// truncation and every flipped bit of a file detectable before parsing.
std::string executableFileBytes(const std::string &payload);

/// Success when `executable` can be run; otherwise a Corrupt failure whose
/// message names the first problem (the buffer, kernel, entry point or step
/// at fault).
Status validateExecutable(const Executable &executable);

/// Reads, parses and validates the executable at `path`.
ErrorOr<Executable> loadExecutable(const std::string &path);
/// Parses and validates `bytes`, an executable file's contents
/// (executableFileBytes), named `name` in messages ("'f.loomx'").
ErrorOr<Executable> parseExecutableFile(const std::string &bytes,
                                        const std::string &name);

/// Validates `executable` and writes it to `path` atomically: a temporary
/// file beside the target, fsync'd and renamed over it. An invalid
/// executable fails as validateExecutable does, a failed write with Io; the
/// message names the file.
Status saveExecutable(const std::string &path, const Executable &executable);

} // namespace loom

#endif // LOOM_RUNTIME_EXECUTABLE_H
