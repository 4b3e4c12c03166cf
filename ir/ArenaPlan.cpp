//===- ArenaPlan.cpp - The interpreter's arena for planned functions ------===//
//
// Values go into the arena in the bytes a backend would store (f32 as 4-byte
// floats, bf16 and f16 as their 16-bit patterns, i1 as one byte), so reading
// one back is exact for a value already rounded to its element type, and a
// value another buffer overwrote comes back different.
//
//===----------------------------------------------------------------------===//

#include "ir/ArenaPlan.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"

#include <cstring>

using namespace mlir;
using namespace loom;

int64_t loom::elementByteWidth(Type type) {
  if (type.isF16() || type.isBF16())
    return 2;
  if (type.isF32() || type.isSignlessInteger(32))
    return 4;
  if (type.isF64() || type.isSignlessInteger(64))
    return 8;
  if (type.isSignlessInteger(1))
    return 1;
  return 0;
}

static int64_t kindByteWidth(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::F64:
  case ElementKind::I64:
    return 8;
  case ElementKind::I1:
    return 1;
  }
  return 0;
}

static const llvm::fltSemantics &halfSemantics(ElementKind kind) {
  return kind == ElementKind::BF16 ? llvm::APFloat::BFloat()
                                   : llvm::APFloat::IEEEhalf();
}

/// Writes `v` as one element of `kind` at `out`.
static void encode(double v, ElementKind kind, uint8_t *out) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16: {
    llvm::APFloat f(v);
    bool lost;
    f.convert(halfSemantics(kind), llvm::APFloat::rmNearestTiesToEven, &lost);
    uint16_t bits = f.bitcastToAPInt().getZExtValue();
    std::memcpy(out, &bits, 2);
    return;
  }
  case ElementKind::F32: {
    float f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
    return;
  }
  case ElementKind::F64:
    std::memcpy(out, &v, 8);
    return;
  case ElementKind::I1:
    *out = v != 0.0;
    return;
  case ElementKind::I32: {
    int32_t i = static_cast<int32_t>(v);
    std::memcpy(out, &i, 4);
    return;
  }
  case ElementKind::I64: {
    int64_t i = static_cast<int64_t>(v);
    std::memcpy(out, &i, 8);
    return;
  }
  }
}

/// Reads one element of `kind` at `in`.
static double decode(const uint8_t *in, ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16: {
    uint16_t bits;
    std::memcpy(&bits, in, 2);
    return llvm::APFloat(halfSemantics(kind), llvm::APInt(16, bits))
        .convertToDouble();
  }
  case ElementKind::F32: {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  case ElementKind::F64: {
    double d;
    std::memcpy(&d, in, 8);
    return d;
  }
  case ElementKind::I1:
    return *in ? 1.0 : 0.0;
  case ElementKind::I32: {
    int32_t i;
    std::memcpy(&i, in, 4);
    return i;
  }
  case ElementKind::I64: {
    int64_t i;
    std::memcpy(&i, in, 8);
    return static_cast<double>(i);
  }
  }
  return 0.0;
}

llvm::Expected<ByteArena> ByteArena::forFunction(func::FuncOp fn) {
  ByteArena arena;
  auto size = fn->getAttrOfType<IntegerAttr>(kArenaBytesAttr);
  if (!size)
    return arena;
  // The interpreter holds the arena in host memory; a plan this large is
  // for a compiled backend, not for the oracle.
  constexpr int64_t kMaxInterpretedArena = int64_t(1) << 34;
  int64_t bytes = size.getInt();
  if (bytes < 0 || bytes > kMaxInterpretedArena)
    return llvm::createStringError("function @" + fn.getSymName() +
                                   " plans an arena of " + llvm::Twine(bytes) +
                                   " bytes, which the interpreter cannot hold");
  for (Operation &op : fn.getBody().getOps()) {
    auto offsets = op.getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
    if (offsets && offsets.size() != static_cast<int64_t>(op.getNumResults()))
      return llvm::createStringError(
          "'" + op.getName().getStringRef() + "' in @" + fn.getSymName() +
          " has " + llvm::Twine(offsets.size()) + " " + kOffsetsAttr + " for " +
          llvm::Twine(op.getNumResults()) + " results");
  }
  arena.planned = true;
  arena.bytes.assign(bytes, 0);
  return arena;
}

int64_t ByteArena::offsetOf(Value v) const {
  auto result = dyn_cast<OpResult>(v);
  if (!planned || !result)
    return -1;
  auto offsets =
      result.getOwner()->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
  if (!offsets || offsets.size() <= result.getResultNumber())
    return -1;
  return offsets[result.getResultNumber()];
}

llvm::Expected<int64_t> ByteArena::placeOf(Value v, const HostTensor &t) const {
  int64_t offset = offsetOf(v);
  int64_t width = kindByteWidth(t.kind);
  int64_t size = t.numel() * width;
  if (offset < 0 || offset > static_cast<int64_t>(bytes.size()) ||
      size > static_cast<int64_t>(bytes.size()) - offset)
    return llvm::createStringError(
        "result #" + llvm::Twine(cast<OpResult>(v).getResultNumber()) +
        " needs " + llvm::Twine(size) + " bytes at offset " +
        llvm::Twine(offset) + ", outside the planned arena of " +
        llvm::Twine(bytes.size()) + " bytes");
  return offset;
}

llvm::Error ByteArena::store(Value v, const HostTensor &t) {
  auto offset = placeOf(v, t);
  if (!offset)
    return offset.takeError();
  int64_t width = kindByteWidth(t.kind);
  uint8_t *out = bytes.data() + *offset;
  for (double x : t.data) {
    encode(x, t.kind, out);
    out += width;
  }
  return llvm::Error::success();
}

llvm::Error ByteArena::load(Value v, HostTensor &t) const {
  auto offset = placeOf(v, t);
  if (!offset)
    return offset.takeError();
  int64_t width = kindByteWidth(t.kind);
  const uint8_t *in = bytes.data() + *offset;
  for (double &x : t.data) {
    x = decode(in, t.kind);
    in += width;
  }
  return llvm::Error::success();
}
