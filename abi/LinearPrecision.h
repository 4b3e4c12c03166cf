//===- LinearPrecision.h - What decoding's linear layers use ----*- C++ -*-===//
//
// A CPU executable records what its decoding's linear layers multiply in
// (CpuTarget.linear_precision): the compiler writes the name, and the CPU
// device packs its weights accordingly (runtime/cpu/PackedGemm.h).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_LINEARPRECISION_H
#define LOOM_ABI_LINEARPRECISION_H

#include "abi/Error.h"

#include <string>

namespace loom::abi {

/// What a packed linear layer multiplies in.
enum class LinearPrecision { F32, Int8, BF16 };

/// The precision a name says: "" or "fp32", "int8", "bf16"; anything else
/// is Corrupt. (Whether a CPU runs it is the device's question.)
inline ErrorOr<LinearPrecision> parseLinearPrecision(const std::string &name) {
  if (name.empty() || name == "fp32")
    return LinearPrecision::F32;
  if (name == "int8")
    return LinearPrecision::Int8;
  if (name == "bf16")
    return LinearPrecision::BF16;
  return Status::failure("unknown linear precision '" + name +
                             "' (fp32, int8 or bf16)",
                         ErrorCode::Corrupt);
}

} // namespace loom::abi

#endif // LOOM_ABI_LINEARPRECISION_H
