//===- DType.h - The element types Loom computes in -------------*- C++ -*-===//
//
// One table of element types for the whole system: the interpreter's values,
// the executable's buffers (whose protobuf enum is only the wire encoding,
// converted in runtime/Executable.h), the runtime's tensors and the
// safetensors files all name an element type by this enum and take its size,
// name and safetensors spelling from here.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_DTYPE_H
#define LOOM_ABI_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom {

enum class DType : uint8_t { F32, F16, BF16, F64, I32, I64, I1 };

struct DTypeInfo {
  DType dtype;
  /// As MLIR prints it: "f32", "bf16", "i1".
  const char *name;
  /// As safetensors headers spell it: "F32", "BF16", "BOOL".
  const char *safetensorsName;
  /// Bytes per element; an i1 takes a whole byte.
  int64_t bytes;
  bool isFloat;
};

/// Every element type, in enum order.
inline constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", "F32", 4, true},
    {DType::F16, "f16", "F16", 2, true},
    {DType::BF16, "bf16", "BF16", 2, true},
    {DType::F64, "f64", "F64", 8, true},
    {DType::I32, "i32", "I32", 4, false},
    {DType::I64, "i64", "I64", 8, false},
    {DType::I1, "i1", "BOOL", 1, false},
};

constexpr const DTypeInfo &dtypeInfo(DType dtype) {
  return kDTypes[static_cast<int>(dtype)];
}
constexpr int64_t dtypeSize(DType dtype) { return dtypeInfo(dtype).bytes; }
constexpr const char *dtypeName(DType dtype) { return dtypeInfo(dtype).name; }
constexpr bool isFloatDType(DType dtype) { return dtypeInfo(dtype).isFloat; }

/// The type named `name` ("f32"), or nothing.
inline std::optional<DType> dtypeNamed(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

/// The type a safetensors header calls `name` ("F32"), or nothing when
/// Loom has no such element type.
inline std::optional<DType> dtypeOfSafetensors(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.safetensorsName)
      return info.dtype;
  return std::nullopt;
}

} // namespace loom

#endif // LOOM_ABI_DTYPE_H
