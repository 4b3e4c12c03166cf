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
// Checksums. Saving records a CRC-32 of every tensor's data bytes in the
// metadata, one entry per tensor, 8 hex digits:
//
//   "__metadata__": {"crc32:encoder.layers.0.linear1.weight": "9a3f01bc", ...}
//
// It is zlib's crc32 (Python's zlib.crc32, so any tool can check a file):
// about 4 GB/s, little beside reading the bytes, and it catches every burst
// of up to 32 flipped bits. Loading checks each tensor's bytes against its
// entry as they are read, before anyone sees them, and fails with Corrupt
// naming the tensor on a mismatch. The entries are consumed: a loaded
// file's metadata never holds them, and a caller may not pass any to
// saving, which writes fresh ones. A file without them (PyTorch's) loads
// unchecked. Loom covers every tensor, so an entry for a tensor the file
// lacks, a malformed value, or a file where some tensors have an entry and
// others none is Corrupt too: such a file was edited after Loom wrote it,
// and the tensor without an entry is likely the edited one. A tool that
// rewrites a Loom file keeping its metadata keeps stale entries too;
// deleting every crc32: entry makes such a file load unchecked.
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
/// it is not a well-formed safetensors file or a tensor fails its checksum.
ErrorOr<SafeTensorFile> loadSafetensors(const std::string &path);

/// Reads `path` one tensor at a time, so that a large file never sits in
/// memory whole: once the header is validated, `onHeader` gets every tensor
/// (dtype and shape, no data) and the metadata; then `onTensor` gets each
/// tensor with its data, in file order, the bytes freed after it returns.
/// Without `onTensor`, no data is read (and so no checksum is checked,
/// though their entries are). A tensor reaches `onTensor` only once its
/// checksum matched. A failure of either callback stops the reading and is
/// returned; the file's own failures are those of loadSafetensors.
Status readSafetensors(
    const std::string &path,
    const std::function<Status(const SafeTensorFile &)> &onHeader,
    const std::function<Status(const std::string &, SafeTensor &)> &onTensor);

/// Writes `file` to `path` atomically, with a checksum of every tensor.
/// Fails with InvalidArgument for a tensor that cannot be stored (a reserved
/// name, an unknown dtype, bytes that do not match its shape) or a metadata
/// key reserved for checksums, and with Io when writing fails.
Status saveSafetensors(const std::string &path, const SafeTensorFile &file);

/// An element of a float tensor that is NaN or infinite.
struct NonFinite {
  int64_t index; // row-major
  double value;
  /// "NaN at element 17", "-Inf at element 3".
  std::string describe() const;
};

/// The first NaN or infinite element of `tensor` when it holds floats (F32,
/// F64, F16, BF16); nothing when every element is finite or it holds no
/// floats. Reads the bits, so it costs about a pass over the bytes.
std::optional<NonFinite> firstNonFinite(const SafeTensor &tensor);

/// "NaN", "Inf" or "-Inf" for a non-finite `value`, else the number.
std::string valueName(double value);

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
