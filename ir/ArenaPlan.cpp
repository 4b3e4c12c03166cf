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
  llvm::Expected<DType> dtype = dtypeOfType(type);
  if (!dtype) {
    llvm::consumeError(dtype.takeError());
    return 0;
  }
  return dtypeSize(*dtype);
}

static const llvm::fltSemantics &halfSemantics(DType kind) {
  return kind == DType::BF16 ? llvm::APFloat::BFloat()
                             : llvm::APFloat::IEEEhalf();
}

/// Writes `v` as one element of `kind` at `out`.
static void encode(double v, DType kind, uint8_t *out) {
  switch (kind) {
  case DType::F16:
  case DType::BF16: {
    llvm::APFloat f(v);
    bool lost;
    f.convert(halfSemantics(kind), llvm::APFloat::rmNearestTiesToEven, &lost);
    uint16_t bits = f.bitcastToAPInt().getZExtValue();
    std::memcpy(out, &bits, 2);
    return;
  }
  case DType::F32: {
    float f = static_cast<float>(v);
    std::memcpy(out, &f, 4);
    return;
  }
  case DType::F64:
    std::memcpy(out, &v, 8);
    return;
  case DType::I1:
    *out = v != 0.0;
    return;
  case DType::I32: {
    int32_t i = static_cast<int32_t>(v);
    std::memcpy(out, &i, 4);
    return;
  }
  case DType::I64: {
    int64_t i = static_cast<int64_t>(v);
    std::memcpy(out, &i, 8);
    return;
  }
  }
}

/// Reads one element of `kind` at `in`.
static double decode(const uint8_t *in, DType kind) {
  switch (kind) {
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, in, 2);
    return llvm::APFloat(halfSemantics(kind), llvm::APInt(16, bits))
        .convertToDouble();
  }
  case DType::F32: {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  case DType::F64: {
    double d;
    std::memcpy(&d, in, 8);
    return d;
  }
  case DType::I1:
    return *in ? 1.0 : 0.0;
  case DType::I32: {
    int32_t i;
    std::memcpy(&i, in, 4);
    return i;
  }
  case DType::I64: {
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
  int64_t width = dtypeSize(t.kind);
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
  int64_t width = dtypeSize(t.kind);
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
  int64_t width = dtypeSize(t.kind);
  const uint8_t *in = bytes.data() + *offset;
  for (double &x : t.data) {
    x = decode(in, t.kind);
    in += width;
  }
  return llvm::Error::success();
}
