//===- Safetensors.cpp - Reading and writing safetensors files ------------===//

#include "runtime/Safetensors.h"

#include "abi/DType.h"
#include "runtime/AtomicFile.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <tuple>

namespace loom {
namespace {

using nlohmann::json;

const char *const kMetadataKey = "__metadata__";
const char *const kChecksumPrefix = "crc32:";

std::string checksumKey(const std::string &name) {
  return kChecksumPrefix + name;
}

bool isChecksumKey(const std::string &key) {
  return key.compare(0, std::strlen(kChecksumPrefix), kChecksumPrefix) == 0;
}

/// zlib's CRC-32 of `bytes`: at several GB/s, a small part of reading them
/// from disk, and what Python's zlib.crc32 gives, so any tool can check it.
uint32_t crc32Of(const std::vector<uint8_t> &bytes) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0, Z_NULL, 0), bytes.data(), bytes.size()));
}

std::string checksumText(uint32_t crc) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", crc);
  return text;
}

/// Exactly 8 hex digits, either case.
std::optional<uint32_t> parseChecksum(const std::string &text) {
  if (text.size() != 8)
    return std::nullopt;
  uint32_t value = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0)
      return std::nullopt;
    value = value << 4 | uint32_t(digit);
  }
  return value;
}

// Data is little-endian whatever the host is, so bytes are assembled
// explicitly instead of memcpy'd.
uint64_t loadLE(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void storeLE(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i, v >>= 8)
    p[i] = static_cast<uint8_t>(v);
}

// Narrow IEEE-style floats (F16: 5 exponent bits, 10 mantissa bits; BF16: 8
// and 7). Rounding goes straight from double so there is no double rounding
// through f32. Scaling by powers of two is exact, and nearbyint rounds ties
// to even in the default rounding mode.
uint64_t encodeNarrowFloat(double v, int expBits, int mantBits) {
  uint64_t sign = std::signbit(v) ? uint64_t(1) << (expBits + mantBits) : 0;
  uint64_t expMask = (uint64_t(1) << expBits) - 1;
  uint64_t implicit = uint64_t(1) << mantBits;
  if (std::isnan(v))
    return sign | (expMask << mantBits) | (implicit >> 1);
  int bias = (1 << (expBits - 1)) - 1;
  int minExp = 1 - bias;
  double a = std::fabs(v);
  if (a < std::ldexp(1.0, minExp)) {
    // Subnormal; a result of `implicit` is the smallest normal, whose bits are
    // exactly that.
    return sign | static_cast<uint64_t>(
                      std::nearbyint(std::ldexp(a, mantBits - minExp)));
  }
  if (std::isinf(a))
    return sign | (expMask << mantBits);
  int e;
  std::frexp(a, &e);
  --e; // a = 1.m * 2^e
  auto m = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, mantBits - e)));
  if (m == 2 * implicit) {
    m = implicit;
    ++e;
  }
  if (e > bias)
    return sign | (expMask << mantBits);
  return sign | (uint64_t(e + bias) << mantBits) | (m - implicit);
}

double decodeNarrowFloat(uint64_t bits, int expBits, int mantBits) {
  bool negative = (bits >> (expBits + mantBits)) & 1;
  uint64_t expMask = (uint64_t(1) << expBits) - 1;
  uint64_t e = (bits >> mantBits) & expMask;
  uint64_t m = bits & ((uint64_t(1) << mantBits) - 1);
  int bias = (1 << (expBits - 1)) - 1;
  double v;
  if (e == 0)
    v = std::ldexp(static_cast<double>(m), 1 - bias - mantBits);
  else if (e == expMask)
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(static_cast<double>(m | (uint64_t(1) << mantBits)),
                   static_cast<int>(e) - bias - mantBits);
  return negative ? -v : v;
}

/// The index of the first `Size`-byte little-endian element of `data` whose
/// `mask` bits are all set. A fixed size lets the loop compile to plain
/// loads.
template <int Size>
std::optional<size_t> firstAllOnes(const uint8_t *data, size_t bytes,
                                   uint64_t mask) {
  size_t n = bytes / Size;
  for (size_t i = 0; i < n; ++i)
    if ((loadLE(data + i * Size, Size) & mask) == mask)
      return i;
  return std::nullopt;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

// The byte size of `shape` x `dtype`, or nothing on a negative dim or
// overflow (a hostile header must not wrap around into a small size).
std::optional<uint64_t> byteSize(const std::vector<int64_t> &shape,
                                 int64_t elementSize) {
  // The dims other than 0 must multiply to an int64 whatever their order,
  // even when a 0 makes the tensor empty: element counts are int64
  // everywhere (SafeTensor::numElements multiplies before it meets the 0).
  uint64_t elements = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d == 0) {
      empty = true;
      continue;
    }
    if (elements > uint64_t(std::numeric_limits<int64_t>::max()) / d)
      return std::nullopt;
    elements *= static_cast<uint64_t>(d);
  }
  if (empty)
    return 0;
  if (elements > std::numeric_limits<uint64_t>::max() / elementSize)
    return std::nullopt;
  return elements * static_cast<uint64_t>(elementSize);
}

/// A malformed file.
Status corrupt(std::string message) {
  return Status::failure(std::move(message), ErrorCode::Corrupt);
}

bool isNonNegativeInteger(const json &j) {
  return j.is_number_unsigned() ||
         (j.is_number_integer() && j.get<int64_t>() >= 0);
}

struct Extent {
  uint64_t begin, end;
  std::string name;
};

// Parses one header entry into `tensor` (without data) and its extent.
Status parseEntry(const std::string &name, const json &entry,
                  SafeTensor &tensor, Extent &extent) {
  std::string where = "tensor '" + name + "': ";
  if (!entry.is_object())
    return corrupt(where + "header entry is not a JSON object");
  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    return corrupt(where + "missing or non-string \"dtype\"");
  tensor.dtype = dtype->get<std::string>();
  std::optional<int64_t> elementSize = dtypeSize(tensor.dtype);
  if (!elementSize)
    return corrupt(where + "unknown dtype '" + tensor.dtype + "'");
  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    return corrupt(where + "missing or non-array \"shape\"");
  for (size_t i = 0; i < shape->size(); ++i) {
    const json &d = (*shape)[i];
    // The entry alone, and only when it is a scalar: printing an array
    // recurses as deep as the header nests them, and a million nested
    // brackets overflowed the stack.
    if (!isNonNegativeInteger(d) ||
        d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return corrupt(where + "shape entry " + std::to_string(i) + " (" +
                     (d.is_primitive() ? d.dump() : d.type_name()) +
                     ") is not a non-negative integer");
    tensor.shape.push_back(d.get<int64_t>());
  }
  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !isNonNegativeInteger((*offsets)[0]) ||
      !isNonNegativeInteger((*offsets)[1]))
    return corrupt(where +
                   "\"data_offsets\" must be two non-negative integers");
  extent = {(*offsets)[0].get<uint64_t>(), (*offsets)[1].get<uint64_t>(), name};
  if (extent.end < extent.begin)
    return corrupt(where + "data_offsets " + offsets->dump() +
                   " end before they begin");
  std::optional<uint64_t> expected = byteSize(tensor.shape, *elementSize);
  if (!expected)
    return corrupt(where + "shape " + shapeString(tensor.shape) +
                   " is too large");
  if (extent.end - extent.begin != *expected)
    return corrupt(where + "data_offsets " + offsets->dump() + " span " +
                   std::to_string(extent.end - extent.begin) +
                   " bytes but shape " + shapeString(tensor.shape) + " of " +
                   tensor.dtype + " needs " + std::to_string(*expected));
  return Status::success();
}

// Checks that the extents tile [0, dataSize) exactly, as the format demands.
Status checkExtents(std::vector<Extent> extents, uint64_t dataSize) {
  for (const Extent &e : extents)
    if (e.end > dataSize)
      return corrupt("tensor '" + e.name + "': data_offsets [" +
                     std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] run past the data section (" +
                     std::to_string(dataSize) + " bytes)");
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) {
              return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
            });
  uint64_t covered = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    const Extent &e = extents[i];
    if (e.begin < covered)
      return corrupt("tensors '" + extents[i - 1].name + "' and '" + e.name +
                     "' overlap in the data section");
    if (e.begin > covered)
      return corrupt("bytes [" + std::to_string(covered) + ", " +
                     std::to_string(e.begin) +
                     ") of the data section belong to no tensor");
    covered = e.end;
  }
  if (covered != dataSize)
    return corrupt("the data section is " + std::to_string(dataSize) +
                   " bytes but the tensors cover " + std::to_string(covered));
  return Status::success();
}

/// Moves the checksum entries out of `file`'s metadata into `checksums`,
/// checking that they name the file's tensors, hold 8 hex digits, and cover
/// every tensor when there are any.
Status takeChecksums(SafeTensorFile &file,
                     std::map<std::string, uint32_t> &checksums) {
  for (auto it = file.metadata.begin(); it != file.metadata.end();) {
    if (!isChecksumKey(it->first)) {
      ++it;
      continue;
    }
    std::string name = it->first.substr(std::strlen(kChecksumPrefix));
    if (!file.tensors.count(name))
      return corrupt("checksum entry '" + it->first +
                     "' is for a tensor the file does not hold");
    std::optional<uint32_t> value = parseChecksum(it->second);
    if (!value)
      return corrupt("checksum entry '" + it->first + "' is '" +
                     it->second.substr(0, 32) + "', not 8 hex digits");
    checksums[name] = *value;
    it = file.metadata.erase(it);
  }
  if (checksums.empty())
    return Status::success(); // not written by Loom: nothing to check
  for (const auto &[name, tensor] : file.tensors)
    if (!checksums.count(name))
      return corrupt("tensor '" + name +
                     "' has no checksum though the file's other tensors "
                     "have one, so the file was changed after it was "
                     "written; without its crc32: metadata entries it loads "
                     "unchecked");
  return Status::success();
}

} // namespace

int64_t SafeTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::optional<int64_t> dtypeSize(const std::string &dtype) {
  if (std::optional<DType> known = dtypeOfSafetensors(dtype))
    return loom::dtypeSize(*known);
  // What the format allows beyond Loom's element types: a file may hold
  // such tensors (a PyTorch checkpoint's), which Loom reads but never uses.
  static const std::map<std::string, int64_t> others = {
      {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2}, {"U16", 2}, {"U32", 4},     {"U64", 8}};
  auto it = others.find(dtype);
  if (it == others.end())
    return std::nullopt;
  return it->second;
}

Status readSafetensors(
    const std::string &path,
    const std::function<Status(const SafeTensorFile &)> &onHeader,
    const std::function<Status(const std::string &, SafeTensor &)> &onTensor) {
  using Result = Status;
  // A directory opens as a stream on Linux and only fails on reading; say
  // what is wrong instead of reporting a short file.
  struct stat status;
  if (::stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode))
    return Result::failure("'" + path + "' is not a regular file",
                           ErrorCode::Io);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int openErrno = errno;
    return Result::failure(
        "cannot open '" + path + "': " + std::strerror(openErrno),
        openErrno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io);
  }
  in.seekg(0, std::ios::end);
  auto fileSize = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  std::string prefix = "'" + path + "'";
  if (fileSize < 8)
    return Result::failure(prefix + ": file too short (" +
                               std::to_string(fileSize) +
                               " bytes) to hold the 8-byte header length",
                           ErrorCode::Corrupt);
  uint8_t lengthBytes[8];
  in.read(reinterpret_cast<char *>(lengthBytes), 8);
  uint64_t headerSize = loadLE(lengthBytes, 8);
  if (headerSize > fileSize - 8)
    return Result::failure(prefix + ": header length " +
                               std::to_string(headerSize) +
                               " is larger than the rest of the file (" +
                               std::to_string(fileSize - 8) + " bytes)",
                           ErrorCode::Corrupt);
  std::string header(headerSize, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(headerSize)))
    return Result::failure(prefix + ": cannot read the header", ErrorCode::Io);

  json root;
  try {
    root = json::parse(header);
  } catch (const json::exception &e) {
    return Result::failure(prefix + ": malformed JSON header: " + e.what(),
                           ErrorCode::Corrupt);
  }
  if (!root.is_object())
    return Result::failure(prefix + ": the JSON header is not an object",
                           ErrorCode::Corrupt);

  SafeTensorFile file;
  std::vector<Extent> extents;
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == kMetadataKey) {
      if (!it->is_object())
        return Result::failure(prefix + ": __metadata__ is not an object",
                               ErrorCode::Corrupt);
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return Result::failure(prefix + ": __metadata__ entry '" + m.key() +
                                     "' is not a string",
                                 ErrorCode::Corrupt);
        file.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafeTensor tensor;
    Extent extent;
    if (Status entry = parseEntry(it.key(), *it, tensor, extent); !entry.ok())
      return entry.withContext(prefix);
    extents.push_back(extent);
    file.tensors.emplace(it.key(), std::move(tensor));
  }
  uint64_t dataStart = 8 + headerSize;
  if (Status tiled = checkExtents(extents, fileSize - dataStart); !tiled.ok())
    return tiled.withContext(prefix);
  std::map<std::string, uint32_t> checksums;
  if (Status taken = takeChecksums(file, checksums); !taken.ok())
    return taken.withContext(prefix);
  LOOM_RETURN_IF_ERROR(onHeader(file));
  if (!onTensor)
    return Status::success();

  // One tensor's data at a time, in file order.
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) { return a.begin < b.begin; });
  for (const Extent &e : extents) {
    SafeTensor &tensor = file.tensors[e.name];
    tensor.bytes.resize(e.end - e.begin);
    in.seekg(static_cast<std::streamoff>(dataStart + e.begin));
    if (!in.read(reinterpret_cast<char *>(tensor.bytes.data()),
                 static_cast<std::streamsize>(tensor.bytes.size())))
      return Result::failure(prefix + ": cannot read the data of tensor '" +
                                 e.name + "'",
                             ErrorCode::Io);
    if (auto sum = checksums.find(e.name);
        sum != checksums.end() && crc32Of(tensor.bytes) != sum->second)
      return Result::failure(prefix + ": tensor '" + e.name +
                                 "' fails its checksum: the file is corrupt",
                             ErrorCode::Corrupt);
    LOOM_RETURN_IF_ERROR(onTensor(e.name, tensor));
    std::vector<uint8_t>().swap(tensor.bytes);
  }
  return Status::success();
}

ErrorOr<SafeTensorFile> loadSafetensors(const std::string &path) {
  SafeTensorFile file;
  Status read = readSafetensors(
      path,
      [&](const SafeTensorFile &header) {
        file = header;
        return Status::success();
      },
      [&](const std::string &name, SafeTensor &tensor) {
        file.tensors[name].bytes = std::move(tensor.bytes);
        return Status::success();
      });
  if (!read.ok())
    return read;
  return file;
}

Status saveSafetensors(const std::string &path, const SafeTensorFile &file) {
  json root = json::object();
  json metadata = json::object();
  for (const auto &[key, value] : file.metadata) {
    if (isChecksumKey(key))
      return Status::failure("cannot save metadata '" + key +
                             "': keys starting with '" + kChecksumPrefix +
                             "' hold the checksums saving writes");
    metadata[key] = value;
  }
  uint64_t offset = 0;
  for (const auto &[name, tensor] : file.tensors) {
    std::string where = "cannot save tensor '" + name + "': ";
    if (name == kMetadataKey)
      return Status::failure(where + "the name is reserved for metadata");
    std::optional<int64_t> elementSize = dtypeSize(tensor.dtype);
    if (!elementSize)
      return Status::failure(where + "unknown dtype '" + tensor.dtype + "'");
    std::optional<uint64_t> expected = byteSize(tensor.shape, *elementSize);
    if (!expected || *expected != tensor.bytes.size())
      return Status::failure(
          where + "it holds " + std::to_string(tensor.bytes.size()) +
          " bytes but shape " + shapeString(tensor.shape) + " of " +
          tensor.dtype + " needs " +
          (expected ? std::to_string(*expected) : std::string("more")));
    root[name] = {{"dtype", tensor.dtype},
                  {"shape", tensor.shape},
                  {"data_offsets", {offset, offset + *expected}}};
    metadata[checksumKey(name)] = checksumText(crc32Of(tensor.bytes));
    offset += *expected;
  }
  if (!metadata.empty())
    root[kMetadataKey] = std::move(metadata);
  std::string header = root.dump();
  // Pad with spaces so the data section starts 8-byte aligned, which lets a
  // reader map the file and use the data in place.
  header.append((8 - header.size() % 8) % 8, ' ');
  uint8_t lengthBytes[8];
  storeLE(lengthBytes, header.size(), 8);

  std::vector<BytePiece> pieces = {{lengthBytes, 8},
                                   {header.data(), header.size()}};
  for (const auto &[name, tensor] : file.tensors)
    pieces.push_back({tensor.bytes.data(), tensor.bytes.size()});
  return writeFileAtomically(path, pieces);
}

std::string NonFinite::describe() const {
  return valueName(value) + " at element " + std::to_string(index);
}

std::string valueName(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value < 0 ? "-Inf" : "Inf";
  std::ostringstream os;
  os << value;
  return os.str();
}

std::optional<NonFinite> firstNonFinite(const SafeTensor &tensor) {
  // An IEEE float is NaN or infinite exactly when its exponent bits are all
  // ones; testing them needs no conversion.
  const uint8_t *data = tensor.bytes.data();
  size_t bytes = tensor.bytes.size();
  std::optional<size_t> found;
  int size = 2;
  if (tensor.dtype == "F32")
    size = 4, found = firstAllOnes<4>(data, bytes, 0x7f800000);
  else if (tensor.dtype == "F64")
    size = 8, found = firstAllOnes<8>(data, bytes, 0x7ff0000000000000);
  else if (tensor.dtype == "F16")
    found = firstAllOnes<2>(data, bytes, 0x7c00);
  else if (tensor.dtype == "BF16")
    found = firstAllOnes<2>(data, bytes, 0x7f80);
  if (!found)
    return std::nullopt;
  const uint8_t *p = data + *found * size;
  SafeTensor one{tensor.dtype, {1}, std::vector<uint8_t>(p, p + size)};
  return NonFinite{int64_t(*found), (*toDoubles(one))[0]};
}

ErrorOr<std::vector<double>> toDoubles(const SafeTensor &tensor) {
  using Result = ErrorOr<std::vector<double>>;
  std::optional<int64_t> size = dtypeSize(tensor.dtype);
  if (!size)
    return Result::failure("unknown dtype '" + tensor.dtype + "'");
  int n = static_cast<int>(*size);
  if (tensor.bytes.size() % n != 0)
    return Result::failure("tensor of " + tensor.dtype + " holds " +
                           std::to_string(tensor.bytes.size()) +
                           " bytes, not a whole number of elements");
  std::vector<double> out(tensor.bytes.size() / n);
  const uint8_t *p = tensor.bytes.data();
  for (size_t i = 0; i < out.size(); ++i, p += n) {
    uint64_t bits = loadLE(p, n);
    if (tensor.dtype == "F32") {
      uint32_t b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, 4);
      out[i] = f;
    } else if (tensor.dtype == "F64") {
      std::memcpy(&out[i], &bits, 8);
    } else if (tensor.dtype == "F16") {
      out[i] = decodeNarrowFloat(bits, 5, 10);
    } else if (tensor.dtype == "BF16") {
      out[i] = decodeNarrowFloat(bits, 8, 7);
    } else if (tensor.dtype == "I32") {
      out[i] = static_cast<int32_t>(static_cast<uint32_t>(bits));
    } else if (tensor.dtype == "I64") {
      out[i] = static_cast<double>(static_cast<int64_t>(bits));
    } else {
      return Result::failure("cannot convert " + tensor.dtype + " to double");
    }
  }
  return out;
}

ErrorOr<SafeTensor> fromDoubles(const std::vector<double> &values,
                                std::vector<int64_t> shape,
                                const std::string &dtype) {
  using Result = ErrorOr<SafeTensor>;
  std::optional<int64_t> size = dtypeSize(dtype);
  if (!size)
    return Result::failure("unknown dtype '" + dtype + "'");
  std::optional<uint64_t> expected = byteSize(shape, 1);
  if (!expected || *expected != values.size())
    return Result::failure(std::to_string(values.size()) +
                           " values do not fill shape " + shapeString(shape));
  SafeTensor tensor{dtype, std::move(shape), {}};
  int n = static_cast<int>(*size);
  tensor.bytes.resize(values.size() * n);
  uint8_t *p = tensor.bytes.data();
  for (size_t i = 0; i < values.size(); ++i, p += n) {
    double v = values[i];
    uint64_t bits;
    if (dtype == "F32") {
      float f = static_cast<float>(v);
      uint32_t b32;
      std::memcpy(&b32, &f, 4);
      bits = b32;
    } else if (dtype == "F64") {
      std::memcpy(&bits, &v, 8);
    } else if (dtype == "F16") {
      bits = encodeNarrowFloat(v, 5, 10);
    } else if (dtype == "BF16") {
      bits = encodeNarrowFloat(v, 8, 7);
    } else if (dtype == "I32" || dtype == "I64") {
      double limit = dtype == "I32" ? 2147483648.0 : 9223372036854775808.0;
      if (v != std::trunc(v) || v < -limit || v >= limit)
        return Result::failure("value " + std::to_string(v) + " at index " +
                               std::to_string(i) +
                               " is not an integer that fits in " + dtype);
      bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    } else {
      return Result::failure("cannot convert double to " + dtype);
    }
    storeLE(p, bits, n);
  }
  return tensor;
}

} // namespace loom
