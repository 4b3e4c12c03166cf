//===- OnnxTensors.cpp - ONNX tensors and element types -------------------===//
//
// TensorProto to HostTensor (the typed fields and raw little-endian data as
// onnx.proto defines them), the element types both sides have, and the
// broadcasting arithmetic the converters fold constants with.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImport.h"
#include "frontend/onnx/OnnxImporter.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace loom;
using namespace loom::onnx_import;
using llvm::Expected;

static llvm::Error tensorError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

bool SymbolicSize::operator==(const SymbolicSize &other) const {
  if (factor != other.factor || dims.size() != other.dims.size())
    return false;
  auto sorted = [](auto dims) {
    llvm::sort(dims, [](const auto &a, const auto &b) {
      return std::make_pair(a.first.getAsOpaquePointer(), a.second) <
             std::make_pair(b.first.getAsOpaquePointer(), b.second);
    });
    return dims;
  };
  return sorted(dims) == sorted(other.dims);
}

std::vector<SymbolicSize> loom::onnx_import::sizesOf(Tensor t) {
  std::vector<SymbolicSize> out;
  for (int64_t i = 0; i < t.rank(); ++i)
    out.push_back(t.dim(i) == kDyn ? SymbolicSize::dimOf(t.value(), i)
                                   : SymbolicSize::of(t.dim(i)));
  return out;
}

ImportedValue loom::onnx_import::constantValue(HostTensor t) {
  ImportedValue v;
  v.onnxType = onnxTypeOf(t.kind);
  v.constant = std::move(t);
  return v;
}

ImportedValue loom::onnx_import::sizesValue(std::vector<SymbolicSize> sizes,
                                            bool scalar, int32_t onnxType) {
  bool constant =
      llvm::all_of(sizes, [](const SymbolicSize &s) { return s.isConstant(); });
  if (constant) {
    std::vector<double> data;
    for (const SymbolicSize &s : sizes)
      data.push_back(double(s.factor));
    std::vector<int64_t> shape;
    if (!scalar)
      shape.push_back(int64_t(sizes.size()));
    return constantValue(HostTensor(
        shape, onnxType == onnx::TensorProto::INT32 ? DType::I32 : DType::I64,
        data));
  }
  ImportedValue v;
  v.sizes = std::move(sizes);
  v.sizesAreScalar = scalar;
  v.onnxType = onnxType;
  return v;
}

std::string loom::onnx_import::onnxTypeName(int32_t type) {
  if (onnx::TensorProto::DataType_IsValid(type))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(type));
  return "element type " + std::to_string(type);
}

Expected<DType> loom::onnx_import::dtypeOfOnnx(int32_t type) {
  switch (type) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::I1;
  default:
    return tensorError(onnxTypeName(type) +
                       " has no Loom element type (Loom has FLOAT, FLOAT16, "
                       "BFLOAT16, DOUBLE, INT32, INT64 and BOOL)");
  }
}

int32_t loom::onnx_import::onnxTypeOf(DType kind) {
  switch (kind) {
  case DType::F32:
    return onnx::TensorProto::FLOAT;
  case DType::F16:
    return onnx::TensorProto::FLOAT16;
  case DType::BF16:
    return onnx::TensorProto::BFLOAT16;
  case DType::F64:
    return onnx::TensorProto::DOUBLE;
  case DType::I32:
    return onnx::TensorProto::INT32;
  case DType::I64:
    return onnx::TensorProto::INT64;
  case DType::I1:
    return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

/// The value of 16-bit float `bits` of `kind` (F16 or BF16).
static double fromHalfBits(uint16_t bits, DType kind) {
  const llvm::fltSemantics &semantics =
      kind == DType::F16 ? llvm::APFloat::IEEEhalf() : llvm::APFloat::BFloat();
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).convertToDouble();
}

/// Element `i` of little-endian `raw` holding elements of `kind`.
static double rawElement(const std::string &raw, int64_t i, DType kind) {
  const char *p = raw.data() + i * dtypeSize(kind);
  switch (kind) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return fromHalfBits(v, kind);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  case DType::I1:
    return p[0] != 0;
  }
  return 0;
}

Expected<HostTensor> loom::hostTensorOf(const onnx::TensorProto &tensor) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return tensorError("its data is stored outside the model file, which "
                       "Loom does not read");
  if (tensor.has_segment())
    return tensorError("it is stored in segments");
  Expected<DType> kind = dtypeOfOnnx(tensor.data_type());
  if (!kind)
    return kind.takeError();
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > (int64_t(1) << 40) / d))
      return tensorError("its dims are negative or too large");
    count *= d;
  }
  // The data must be there before anything is allocated for it: a few
  // bytes of protobuf can claim a tensor of 2^40 elements.
  bool raw = tensor.has_raw_data();
  if (raw &&
      int64_t(tensor.raw_data().size()) != count * int64_t(dtypeSize(*kind)))
    return tensorError("its raw data is " +
                       std::to_string(tensor.raw_data().size()) +
                       " bytes for " + std::to_string(count) + " elements");
  if (!raw) {
    int64_t have = *kind == DType::F32   ? tensor.float_data_size()
                   : *kind == DType::F64 ? tensor.double_data_size()
                   : *kind == DType::I64 ? tensor.int64_data_size()
                                         : tensor.int32_data_size();
    if (have != count)
      return tensorError("it holds " + std::to_string(have) +
                         " elements for a shape of " + std::to_string(count));
  }
  HostTensor out(shape, *kind);
  if (raw) {
    for (int64_t i = 0; i < count; ++i)
      out.data[i] = rawElement(tensor.raw_data(), i, *kind);
    return out;
  }
  switch (*kind) {
  case DType::F32:
    for (int64_t i = 0; i < count; ++i)
      out.data[i] = tensor.float_data(i);
    break;
  case DType::F64:
    for (int64_t i = 0; i < count; ++i)
      out.data[i] = tensor.double_data(i);
    break;
  case DType::I64:
    for (int64_t i = 0; i < count; ++i)
      out.data[i] = static_cast<double>(tensor.int64_data(i));
    break;
  case DType::F16:
  case DType::BF16:
  case DType::I32:
  case DType::I1:
    // onnx.proto keeps these in int32_data (16-bit floats as their bits).
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = tensor.int32_data(i);
      out.data[i] = *kind == DType::F16 || *kind == DType::BF16
                        ? fromHalfBits(static_cast<uint16_t>(v), *kind)
                    : *kind == DType::I1 ? double(v != 0)
                                         : double(v);
    }
    break;
  }
  return out;
}

Expected<HostTensor> loom::readOnnxTensorFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return tensorError("cannot read '" + path +
                       "': " + buffer.getError().message());
  onnx::TensorProto tensor;
  if ((*buffer)->getBufferSize() > size_t(INT32_MAX) ||
      !tensor.ParseFromArray((*buffer)->getBufferStart(),
                             static_cast<int>((*buffer)->getBufferSize())))
    return tensorError("'" + path + "' is not an ONNX TensorProto");
  Expected<HostTensor> out = hostTensorOf(tensor);
  if (!out)
    return tensorError("'" + path + "': " + llvm::toString(out.takeError()));
  return out;
}

std::optional<HostTensor>
loom::onnx_import::foldBinary(const HostTensor &a, const HostTensor &b,
                              DType kind,
                              const std::function<double(double, double)> &f) {
  // Constants have static shapes, which loom's own rule broadcasts.
  auto broadcast = loom::broadcastShapes(a.shape, b.shape);
  if (!broadcast)
    return std::nullopt;
  const std::vector<int64_t> shape(broadcast->begin(), broadcast->end());
  HostTensor out(shape, kind);
  int64_t rank = static_cast<int64_t>(shape.size());
  // The flat index of an output element in an operand of its own rank.
  auto indexIn = [&](const HostTensor &t, int64_t flat) {
    int64_t index = 0, stride = 1;
    int64_t offset = rank - t.rank();
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t coord = flat % shape[d];
      flat /= shape[d];
      if (d >= offset) {
        int64_t size = t.shape[d - offset];
        index += (size == 1 ? 0 : coord) * stride;
        stride *= size;
      }
    }
    return index;
  };
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] =
        roundToKind(f(a.data[indexIn(a, i)], b.data[indexIn(b, i)]), kind);
  return out;
}
