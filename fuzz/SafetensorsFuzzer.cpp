//===- SafetensorsFuzzer.cpp - Fuzzing the safetensors loader -------------===//
//
// The input is a safetensors file. Both ways of reading it run over it:
// `loadSafetensors` (the whole file) and `readSafetensors` (the header, then
// one tensor at a time), and they must agree. Every tensor goes through
// `toDoubles`, and for the dtypes Loom converts, back through `fromDoubles`,
// which must give the same bytes (NaNs aside: their payload is not kept;
// I64 beyond 2^53 aside: a double cannot hold it).
// A file that loads is saved and loaded again, and must come back the same.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "runtime/Safetensors.h"

#include <cmath>
#include <cstring>
#include <unistd.h>

using namespace loom;
using loom::fuzz::fail;

namespace {

bool sameTensor(const SafeTensor &a, const SafeTensor &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

bool sameFile(const SafeTensorFile &a, const SafeTensorFile &b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size())
    return false;
  for (auto ia = a.tensors.begin(), ib = b.tensors.begin();
       ia != a.tensors.end(); ++ia, ++ib)
    if (ia->first != ib->first || !sameTensor(ia->second, ib->second))
      return false;
  return true;
}

/// toDoubles, and fromDoubles back where the dtype converts both ways.
void checkConversions(const std::string &name, const SafeTensor &tensor) {
  ErrorOr<std::vector<double>> values = toDoubles(tensor);
  if (!values) {
    if (values.error().empty())
      fail("toDoubles refuses '" + name + "' without a message");
    return;
  }
  if (static_cast<int64_t>(values->size()) != tensor.numElements())
    fail("toDoubles of '" + name + "' gives " + std::to_string(values->size()) +
         " values for " + std::to_string(tensor.numElements()) + " elements");
  // A double holds every integer up to 2^53 exactly; beyond, an I64 comes
  // back rounded (and fromDoubles rightly refuses a value rounded to 2^63).
  if (tensor.dtype == "I64")
    for (double v : *values)
      if (std::fabs(v) > 9007199254740992.0)
        return;
  ErrorOr<SafeTensor> back = fromDoubles(*values, tensor.shape, tensor.dtype);
  if (!back)
    fail("fromDoubles refuses what toDoubles made of '" + name +
         "': " + back.error());
  size_t width = tensor.bytes.size() / std::max<size_t>(values->size(), 1);
  for (size_t i = 0; i < values->size(); ++i) {
    if (std::isnan((*values)[i]))
      continue;
    if (std::memcmp(back->bytes.data() + i * width,
                    tensor.bytes.data() + i * width, width) != 0)
      fail("element " + std::to_string(i) + " of '" + name + "' (" +
           tensor.dtype + ") does not survive toDoubles and fromDoubles");
  }
}

/// A path in shared memory for saving, private to this process.
std::string scratchPath() {
  static const std::string path =
      "/dev/shm/loom-fuzz-safetensors-" + std::to_string(::getpid());
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::MemFile file(data, size);
  ErrorOr<SafeTensorFile> loaded = loadSafetensors(file.path());

  SafeTensorFile streamed;
  size_t tensorsSeen = 0;
  Status read = readSafetensors(
      file.path(),
      [&](const SafeTensorFile &header) {
        for (const auto &[name, tensor] : header.tensors)
          if (!tensor.bytes.empty())
            fail("the header of '" + name + "' comes with data");
        streamed = header;
        return Status::success();
      },
      [&](const std::string &name, SafeTensor &tensor) {
        ++tensorsSeen;
        checkConversions(name, tensor);
        streamed.tensors[name].bytes = tensor.bytes;
        return Status::success();
      });

  if (static_cast<bool>(loaded) != read.ok())
    fail("loadSafetensors and readSafetensors disagree: " +
         (loaded ? read.message() : loaded.error()));
  if (!loaded) {
    if (loaded.error().empty() || loaded.code() == ErrorCode::Ok)
      fail("a refused file without a message");
    return 0;
  }
  if (tensorsSeen != loaded->tensors.size() || !sameFile(*loaded, streamed))
    fail("loadSafetensors and readSafetensors read different tensors");

  // Without onTensor, nothing past the header is read.
  if (Status header = readSafetensors(
          file.path(), [](const SafeTensorFile &) { return Status::success(); },
          nullptr);
      !header.ok())
    fail("the header alone does not read: " + header.message());

  if (Status saved = saveSafetensors(scratchPath(), *loaded); !saved.ok())
    fail("a loaded file does not save: " + saved.message());
  ErrorOr<SafeTensorFile> reloaded = loadSafetensors(scratchPath());
  ::unlink(scratchPath().c_str());
  if (!reloaded)
    fail("a saved file does not load: " + reloaded.error());
  if (!sameFile(*loaded, *reloaded))
    fail("a file saved and loaded again differs");
  return 0;
}
