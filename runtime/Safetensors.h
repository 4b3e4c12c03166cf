//===- Safetensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// Checkpoints are safetensors files so that weights move between Loom and
// PyTorch unchanged. The format is an 8-byte little-endian header length N,
// N bytes of JSON mapping each tensor name to its dtype, shape and
// [begin, end) byte offsets into the data section that follows, plus an
// optional "__metadata__" object of strings, then the raw little-endian data.
//
// Loading validates everything the header claims against the file (offsets
// inside the data section, sizes matching shape x dtype, no overlaps or
// holes) and reports the first problem as a message; a bad file never
// crashes the caller. Saving writes a temporary file beside the target,
// fsyncs it and renames it over the target, so a crash leaves either the
// old checkpoint or the new one, never a torn file.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SAFETENSORS_H
#define LOOM_RUNTIME_SAFETENSORS_H

#include "abi/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom {

/// One tensor: its safetensors dtype name ("F32", "BF16", "I64", ...), its
/// shape, and its data as little-endian bytes in row-major order.
struct SafeTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
};

/// The contents of a safetensors file. Tensors are kept sorted by name so a
/// saved file does not depend on insertion order.
struct SafeTensorFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// The size in bytes of one element of `dtype`, or nothing when `dtype` is
/// not a safetensors dtype.
std::optional<int64_t> dtypeSize(const std::string &dtype);

/// Reads and validates the safetensors file at `path`. Fails with NotFound
/// when there is no such file, Io when it cannot be read, and Corrupt when
/// it is not a well-formed safetensors file.
ErrorOr<SafeTensorFile> loadSafetensors(const std::string &path);

/// Reads `path` one tensor at a time, so that a large file never sits in
/// memory whole: once the header is validated, `onHeader` gets every tensor
/// (dtype and shape, no data) and the metadata; then `onTensor` gets each
/// tensor with its data, in file order, the bytes freed after it returns.
/// Without `onTensor`, no data is read. A failure of either callback stops
/// the reading and is returned; the file's own failures are those of
/// loadSafetensors.
Status readSafetensors(
    const std::string &path,
    const std::function<Status(const SafeTensorFile &)> &onHeader,
    const std::function<Status(const std::string &, SafeTensor &)> &onTensor);

/// Writes `file` to `path` atomically. Fails with InvalidArgument for a
/// tensor that cannot be stored (a reserved name, an unknown dtype, bytes
/// that do not match its shape) and with Io when writing fails.
Status saveSafetensors(const std::string &path, const SafeTensorFile &file);

/// The elements of `tensor` as doubles; F32, F64, F16, BF16, I32 and I64.
ErrorOr<std::vector<double>> toDoubles(const SafeTensor &tensor);

/// A tensor of `dtype` and `shape` holding `values`, rounded to nearest even
/// for the float types. For I32 and I64 every value must be an integer in
/// range: ids and counts must survive exactly or not at all.
ErrorOr<SafeTensor> fromDoubles(const std::vector<double> &values,
                                std::vector<int64_t> shape,
                                const std::string &dtype);

} // namespace loom

#endif // LOOM_RUNTIME_SAFETENSORS_H
