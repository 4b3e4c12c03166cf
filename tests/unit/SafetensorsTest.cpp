//===- SafetensorsTest.cpp - Reading and writing safetensors files --------===//

#include "runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom;

namespace {

using Bytes = std::vector<uint8_t>;

/// A fresh directory per test, so tests can run side by side.
class Safetensors : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = ::testing::TempDir() + "loom-safetensors-" + info->name() + "-" +
          std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0777);
  }
  void TearDown() override {
    for (const std::string &name : listDir())
      ::unlink((dir + "/" + name).c_str());
    ::rmdir(dir.c_str());
  }

  std::vector<std::string> listDir() const {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(dir.c_str())) {
      while (dirent *e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
          names.push_back(e->d_name);
      ::closedir(d);
    }
    return names;
  }

  std::string write(const Bytes &bytes) {
    std::string path = dir + "/raw.safetensors";
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  /// A file with `header` as its JSON and `data` as its data section.
  std::string write(const std::string &header, const Bytes &data) {
    Bytes bytes(8);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<uint8_t>(n >> (8 * i));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), data.begin(), data.end());
    return write(bytes);
  }

  /// The load error for a file of `header` and `data`; fails the test if the
  /// file loads.
  std::string loadError(const std::string &header, const Bytes &data) {
    auto file = loadSafetensors(write(header, data));
    EXPECT_FALSE(file) << "loaded a corrupt file: " << header;
    if (file)
      return "";
    EXPECT_EQ(file.code(), ErrorCode::Corrupt) << file.error();
    return file.error();
  }

  std::string dir;
};

SafeTensor tensorOf(const std::vector<double> &values,
                    std::vector<int64_t> shape, const std::string &dtype) {
  auto t = fromDoubles(values, std::move(shape), dtype);
  EXPECT_TRUE(t) << t.error();
  return t ? *t : SafeTensor{};
}

uint64_t bitsOf(double v, const std::string &dtype) {
  SafeTensor t = tensorOf({v}, {1}, dtype);
  uint64_t bits = 0;
  for (size_t i = 0; i < t.bytes.size(); ++i)
    bits |= uint64_t(t.bytes[i]) << (8 * i);
  return bits;
}

double valueOf(uint64_t bits, const std::string &dtype) {
  SafeTensor t{dtype, {1}, {uint8_t(bits), uint8_t(bits >> 8)}};
  auto values = toDoubles(t);
  EXPECT_TRUE(values) << values.error();
  return values ? (*values)[0] : 0.0;
}

const char *kTwoF32 =
    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST_F(Safetensors, RoundTripsEveryDtypeAndMetadata) {
  SafeTensorFile file;
  file.tensors["w"] = tensorOf({1.5, -2.25, 3, 0.1, 1e-3, -7}, {2, 3}, "F32");
  file.tensors["d"] = tensorOf({0.1, -1e300}, {2}, "F64");
  file.tensors["h"] = tensorOf({0.5, -3.75}, {1, 2}, "F16");
  file.tensors["b"] = tensorOf({1.0, -0.15625}, {2, 1}, "BF16");
  file.tensors["i"] = tensorOf({-2147483648.0, 7}, {2}, "I32");
  file.tensors["l"] = tensorOf({-5, 9007199254740992.0}, {2}, "I64");
  file.tensors["scalar"] = tensorOf({42}, {}, "F32");
  file.tensors["empty"] = tensorOf({}, {0, 4}, "F32");
  file.tensors["u8"] = SafeTensor{"U8", {3}, {1, 2, 255}};
  file.metadata["format"] = "pt";
  std::string path = dir + "/ckpt.safetensors";
  Status saved = saveSafetensors(path, file);
  ASSERT_TRUE(saved.ok()) << saved.message();

  auto loaded = loadSafetensors(path);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->metadata, file.metadata);
  ASSERT_EQ(loaded->tensors.size(), file.tensors.size());
  for (const auto &[name, t] : file.tensors) {
    const SafeTensor &l = loaded->tensors.at(name);
    EXPECT_EQ(l.dtype, t.dtype) << name;
    EXPECT_EQ(l.shape, t.shape) << name;
    EXPECT_EQ(l.bytes, t.bytes) << name;
  }
  EXPECT_EQ(*toDoubles(loaded->tensors["d"]),
            (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(*toDoubles(loaded->tensors["h"]),
            (std::vector<double>{0.5, -3.75}));
  EXPECT_EQ(*toDoubles(loaded->tensors["l"]),
            (std::vector<double>{-5, 9007199254740992.0}));
  EXPECT_EQ(loaded->tensors["scalar"].numElements(), 1);
  EXPECT_EQ(loaded->tensors["empty"].numElements(), 0);

  // The data section starts 8-byte aligned and no temporary is left behind.
  std::ifstream in(path, std::ios::binary);
  uint8_t len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  EXPECT_EQ(len[0] % 8, 0);
  EXPECT_EQ(listDir(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(Safetensors, SaveReplacesAnExistingFile) {
  std::string path = dir + "/ckpt.safetensors";
  SafeTensorFile first, second;
  first.tensors["x"] = tensorOf({1, 2, 3}, {3}, "F32");
  second.tensors["y"] = tensorOf({4}, {1}, "F64");
  Status saved = saveSafetensors(path, first);
  ASSERT_TRUE(saved.ok()) << saved.message();
  saved = saveSafetensors(path, second);
  ASSERT_TRUE(saved.ok()) << saved.message();
  auto loaded = loadSafetensors(path);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->tensors.count("x"), 0u);
  EXPECT_EQ(*toDoubles(loaded->tensors.at("y")), std::vector<double>{4});
  EXPECT_EQ(listDir(), std::vector<std::string>{"ckpt.safetensors"});
}

TEST_F(Safetensors, SaveRefusesBadInputWithoutTouchingTheTarget) {
  std::string path = dir + "/ckpt.safetensors";
  SafeTensorFile file;
  file.tensors["short"] = SafeTensor{"F32", {2, 2}, Bytes(12)};
  Status saved = saveSafetensors(path, file);
  EXPECT_EQ(saved.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(saved.message().find("'short'"), std::string::npos)
      << saved.message();
  EXPECT_NE(saved.message().find("needs 16"), std::string::npos)
      << saved.message();
  EXPECT_TRUE(listDir().empty());

  file.tensors.clear();
  file.tensors["x"] = SafeTensor{"Q4", {1}, Bytes(1)};
  saved = saveSafetensors(path, file);
  EXPECT_EQ(saved.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(saved.message().find("unknown dtype 'Q4'"), std::string::npos)
      << saved.message();

  file.tensors.clear();
  saved = saveSafetensors(dir + "/missing/ckpt.safetensors", file);
  EXPECT_EQ(saved.code(), ErrorCode::Io);
  EXPECT_NE(saved.message().find("missing/ckpt.safetensors"), std::string::npos)
      << saved.message();
}

// Bytes laid out by hand as another writer (PyTorch's safetensors) would.
TEST_F(Safetensors, ReadsAHandBuiltFile) {
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append(6, ' ');
  Bytes data = {0x00, 0x00, 0xC0, 0x3F,                          // 1.5f
                0x00, 0x00, 0x00, 0xC0,                          // -2.0f
                0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}; // -3
  auto file = loadSafetensors(write(header, data));
  ASSERT_TRUE(file) << file.error();
  EXPECT_EQ(file->metadata.at("format"), "pt");
  const SafeTensor &a = file->tensors.at("a");
  EXPECT_EQ(a.shape, std::vector<int64_t>{2});
  EXPECT_EQ(*toDoubles(a), (std::vector<double>{1.5, -2.0}));
  const SafeTensor &b = file->tensors.at("b");
  EXPECT_TRUE(b.shape.empty());
  EXPECT_EQ(*toDoubles(b), std::vector<double>{-3});
}

// Streaming: the header first (shapes, no data), then each tensor with its
// data in file order; a callback's failure stops the reading, and a
// malformed file fails before any callback runs.
TEST_F(Safetensors, StreamsTensorsInFileOrder) {
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  Bytes data = {0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0,
                0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  std::string path = write(header, data);
  std::vector<std::string> seen;
  Status read = readSafetensors(
      path,
      [&](const SafeTensorFile &file) {
        seen.push_back("header");
        EXPECT_EQ(file.tensors.size(), 2u);
        EXPECT_TRUE(file.tensors.at("a").bytes.empty());
        EXPECT_EQ(file.tensors.at("a").shape, std::vector<int64_t>{2});
        EXPECT_EQ(file.metadata.at("format"), "pt");
        return Status::success();
      },
      [&](const std::string &name, SafeTensor &tensor) {
        seen.push_back(name);
        if (name == "a")
          EXPECT_EQ(*toDoubles(tensor), (std::vector<double>{1.5, -2.0}));
        else
          EXPECT_EQ(*toDoubles(tensor), std::vector<double>{-3});
        return Status::success();
      });
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(seen, (std::vector<std::string>{"header", "a", "b"}));

  int tensors = 0;
  read = readSafetensors(
      path, [](const SafeTensorFile &) { return Status::success(); },
      [&](const std::string &, SafeTensor &) {
        ++tensors;
        return Status::failure("refused", ErrorCode::Unsupported);
      });
  EXPECT_EQ(read.code(), ErrorCode::Unsupported);
  EXPECT_EQ(tensors, 1);

  bool called = false;
  read = readSafetensors(
      write(header, Bytes(data.begin(), data.end() - 1)),
      [&](const SafeTensorFile &) {
        called = true;
        return Status::success();
      },
      [&](const std::string &, SafeTensor &) {
        called = true;
        return Status::success();
      });
  EXPECT_EQ(read.code(), ErrorCode::Corrupt) << read.message();
  EXPECT_FALSE(called);
}

TEST_F(Safetensors, RejectsTruncatedFiles) {
  auto file = loadSafetensors(write(Bytes{1, 2, 3, 4, 5}));
  ASSERT_FALSE(file);
  EXPECT_EQ(file.code(), ErrorCode::Corrupt);
  EXPECT_NE(file.error().find("file too short"), std::string::npos)
      << file.error();

  Bytes bytes = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  file = loadSafetensors(write(bytes));
  ASSERT_FALSE(file);
  EXPECT_EQ(file.code(), ErrorCode::Corrupt);
  EXPECT_NE(file.error().find("header length 100 is larger than the rest"),
            std::string::npos)
      << file.error();

  file = loadSafetensors(dir + "/nonexistent.safetensors");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.code(), ErrorCode::NotFound);
  EXPECT_NE(file.error().find("cannot open"), std::string::npos);

  file = loadSafetensors(dir);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.code(), ErrorCode::Io);
  EXPECT_NE(file.error().find("not a regular file"), std::string::npos)
      << file.error();
}

TEST_F(Safetensors, RejectsMalformedHeaders) {
  auto has = [](const std::string &error, const std::string &part) {
    EXPECT_NE(error.find(part), std::string::npos)
        << "'" << error << "' lacks '" << part << "'";
  };
  has(loadError(R"({"a":{"dtype":"F32",)", {}), "malformed JSON header");
  has(loadError("[1, 2]", {}), "not an object");
  has(loadError(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})",
                Bytes(4)),
      "unknown dtype 'F31'");
  has(loadError(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", Bytes(4)),
      "\"dtype\"");
  has(loadError(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                Bytes(4)),
      "not a non-negative integer");
  has(loadError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4]}})",
                Bytes(4)),
      "two non-negative integers");
  has(loadError(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})",
                Bytes(4)),
      "end before they begin");
  has(loadError(R"({"__metadata__":{"n":3}})", {}), "'n' is not a string");
}

// A header of a million nested arrays in a shape: the message printed the
// whole shape, and printing a JSON array recurses once per level, so the
// loader overflowed the stack.
TEST_F(Safetensors, RefusesADeeplyNestedShapeWithoutRecursing) {
  const size_t depth = 1000000;
  std::string header = R"({"a":{"dtype":"F32","shape":[1,)" +
                       std::string(depth, '[') + std::string(depth, ']') +
                       R"(],"data_offsets":[0,4]}})";
  std::string error = loadError(header, Bytes(4));
  EXPECT_NE(error.find("shape entry 1 (array) is not a non-negative integer"),
            std::string::npos)
      << error;
}

// An empty tensor whose other dims multiply past int64 loaded, and
// counting its elements overflowed (numElements multiplies before it meets
// the 0). Every order of the dims is refused alike.
TEST_F(Safetensors, RefusesAnEmptyShapeWhoseOtherDimsOverflow) {
  for (const char *shape :
       {"[2147483648,4294967296,0]", "[0,2147483648,4294967296]",
        "[4294967296,0,2147483648]"}) {
    std::string error =
        loadError(std::string(R"({"a":{"dtype":"U8","shape":)") + shape +
                      R"(,"data_offsets":[0,0]}})",
                  {});
    EXPECT_NE(error.find("is too large"), std::string::npos) << error;
  }
}

TEST_F(Safetensors, RejectsOffsetsThatDoNotMatchTheData) {
  auto has = [](const std::string &error, const std::string &part) {
    EXPECT_NE(error.find(part), std::string::npos)
        << "'" << error << "' lacks '" << part << "'";
  };
  // Size does not match shape x dtype.
  has(loadError(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                Bytes(8)),
      "span 8 bytes but shape [3] of F32 needs 12");
  // Past the end of the data section.
  has(loadError(kTwoF32, Bytes(4)), "run past the data section (4 bytes)");
  // Overlapping.
  has(loadError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                Bytes(8)),
      "'a' and 'b' overlap");
  // A hole between tensors.
  has(loadError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                Bytes(12)),
      "bytes [4, 8) of the data section belong to no tensor");
  // Trailing bytes no tensor claims.
  has(loadError(kTwoF32, Bytes(10)),
      "data section is 10 bytes but the tensors cover 8");
  // A shape whose byte size overflows 64 bits must not wrap around.
  has(loadError(R"({"a":{"dtype":"F64","shape":[4611686018427387904,4],)"
                R"("data_offsets":[0,0]}})",
                {}),
      "too large");
}

// Every tensor saved carries a CRC-32 of its bytes in the metadata; loading
// checks and consumes them.
TEST_F(Safetensors, SavesAChecksumOfEveryTensor) {
  SafeTensorFile file;
  // "123456789", whose CRC-32 is the algorithm's published check value.
  file.tensors["check"] =
      SafeTensor{"U8", {9}, Bytes{'1', '2', '3', '4', '5', '6', '7', '8', '9'}};
  file.tensors["empty"] = tensorOf({}, {0}, "F32");
  file.metadata["step"] = "7";
  std::string path = dir + "/ckpt.safetensors";
  Status saved = saveSafetensors(path, file);
  ASSERT_TRUE(saved.ok()) << saved.message();

  std::ifstream in(path, std::ios::binary);
  uint8_t len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  std::string header(len[0] | len[1] << 8, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  EXPECT_NE(header.find(R"("crc32:check":"cbf43926")"), std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("crc32:empty":"00000000")"), std::string::npos)
      << header;

  auto loaded = loadSafetensors(path);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->metadata, file.metadata);
  // What was loaded saves again: the entries are written afresh.
  saved = saveSafetensors(path, *loaded);
  ASSERT_TRUE(saved.ok()) << saved.message();
  EXPECT_TRUE(loadSafetensors(path)) << path;
}

// One bit flipped in a tensor's data: the loader names the tensor, and a
// streaming reader never receives its bytes.
TEST_F(Safetensors, RefusesATensorThatFailsItsChecksum) {
  SafeTensorFile file;
  file.tensors["a.weight"] = tensorOf({1, 2, 3}, {3}, "F32");
  file.tensors["b.weight"] = tensorOf({4, 5, 6, 7}, {2, 2}, "F32");
  std::string path = dir + "/ckpt.safetensors";
  Status saved = saveSafetensors(path, file);
  ASSERT_TRUE(saved.ok()) << saved.message();
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  // The last bytes are b.weight's (tensors are laid out by name); flip the
  // lowest mantissa bit of its second element, a change of one ulp.
  std::streamoff at = size - 3 * 4;
  f.seekg(at);
  char byte;
  f.read(&byte, 1);
  byte ^= 1;
  f.seekp(at);
  f.write(&byte, 1);
  f.close();

  auto loaded = loadSafetensors(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.code(), ErrorCode::Corrupt);
  EXPECT_EQ(loaded.error(), "'" + path +
                                "': tensor 'b.weight' fails its checksum: the "
                                "file is corrupt");

  std::vector<std::string> seen;
  Status read = readSafetensors(
      path, [](const SafeTensorFile &) { return Status::success(); },
      [&](const std::string &name, SafeTensor &) {
        seen.push_back(name);
        return Status::success();
      });
  EXPECT_EQ(read.code(), ErrorCode::Corrupt);
  EXPECT_EQ(seen, std::vector<std::string>{"a.weight"});
  // The header alone (no data read) is still fine.
  read = readSafetensors(
      path, [](const SafeTensorFile &) { return Status::success(); }, nullptr);
  EXPECT_TRUE(read.ok()) << read.message();
}

// Entries that cannot be Loom's: each makes the file Corrupt. Without any
// entry (another writer's file) the same data loads.
TEST_F(Safetensors, RefusesChecksumEntriesLoomDidNotWrite) {
  auto has = [](const std::string &error, const std::string &part) {
    EXPECT_NE(error.find(part), std::string::npos)
        << "'" << error << "' lacks '" << part << "'";
  };
  Bytes data = {0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0};
  std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
  auto headerWith = [&](const std::string &metadata) {
    return "{\"__metadata__\":{" + metadata + "}," + a + "," + b + "}";
  };
  // The right CRC-32s of a's and b's bytes.
  std::string sums = R"("crc32:a":"5cd8256f","crc32:b":"ba201dac")";
  auto file = loadSafetensors(write(headerWith(sums), data));
  ASSERT_TRUE(file) << file.error();
  EXPECT_TRUE(file->metadata.empty());
  file = loadSafetensors(write(headerWith(R"("format":"pt")"), data));
  ASSERT_TRUE(file) << file.error();

  has(loadError(headerWith(sums + R"(,"crc32:c":"00000000")"), data),
      "checksum entry 'crc32:c' is for a tensor the file does not hold");
  has(loadError(headerWith(R"("crc32:a":"5cd8256","crc32:b":"ba201dac")"),
                data),
      "checksum entry 'crc32:a' is '5cd8256', not 8 hex digits");
  has(loadError(headerWith(R"("crc32:a":"0xd8256f","crc32:b":"ba201dac")"),
                data),
      "not 8 hex digits");
  has(loadError(headerWith(R"("crc32:a":"5cd8256f")"), data),
      "tensor 'b' has no checksum though the file's other tensors have one");
  // Upper case is the same number.
  file = loadSafetensors(
      write(headerWith(R"("crc32:a":"5CD8256F","crc32:b":"BA201DAC")"), data));
  EXPECT_TRUE(file) << file.error();
}

TEST_F(Safetensors, SaveRefusesMetadataNamedLikeAChecksum) {
  SafeTensorFile file;
  file.tensors["x"] = tensorOf({1}, {1}, "F32");
  file.metadata["crc32:x"] = "00000000";
  Status saved = saveSafetensors(dir + "/ckpt.safetensors", file);
  EXPECT_EQ(saved.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(saved.message().find("'crc32:x'"), std::string::npos)
      << saved.message();
  EXPECT_TRUE(listDir().empty());
}

TEST(SafetensorsValues, FindsTheFirstNonFiniteElement) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const char *dtype : {"F32", "F64", "F16", "BF16"}) {
    EXPECT_FALSE(firstNonFinite(tensorOf({0, -1, 65504, 1e-8}, {4}, dtype)))
        << dtype;
    auto found = firstNonFinite(tensorOf({0, 1, nan, inf}, {2, 2}, dtype));
    ASSERT_TRUE(found) << dtype;
    EXPECT_EQ(found->describe(), "NaN at element 2") << dtype;
    found = firstNonFinite(tensorOf({0, -inf, nan}, {3}, dtype));
    ASSERT_TRUE(found) << dtype;
    EXPECT_EQ(found->describe(), "-Inf at element 1") << dtype;
    found = firstNonFinite(tensorOf({inf}, {}, dtype));
    ASSERT_TRUE(found) << dtype;
    EXPECT_EQ(found->describe(), "Inf at element 0") << dtype;
  }
  // Integers are always finite.
  EXPECT_FALSE(firstNonFinite(SafeTensor{"U8", {2}, {0xff, 0xff}}));
  EXPECT_FALSE(firstNonFinite(tensorOf({-1, 3}, {2}, "I32")));
}

TEST(SafetensorsConversion, RoundsHalfFloatsToNearestEven) {
  EXPECT_EQ(bitsOf(1.0, "F16"), 0x3C00u);
  EXPECT_EQ(bitsOf(-2.0, "F16"), 0xC000u);
  EXPECT_EQ(bitsOf(65504.0, "F16"), 0x7BFFu);
  EXPECT_EQ(bitsOf(65520.0, "F16"), 0x7C00u); // halfway to 2^16: infinity
  EXPECT_EQ(bitsOf(std::ldexp(1.0, -24), "F16"), 0x0001u);
  EXPECT_EQ(bitsOf(std::ldexp(1.0, -25), "F16"), 0x0000u); // tie to even
  EXPECT_EQ(bitsOf(std::ldexp(3.0, -25), "F16"), 0x0002u);
  EXPECT_EQ(bitsOf(std::ldexp(1023.5, -24), "F16"), 0x0400u); // to normal
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(1.0, -11), "F16"), 0x3C00u);
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(3.0, -11), "F16"), 0x3C02u);
  EXPECT_EQ(bitsOf(-0.0, "F16"), 0x8000u);
  EXPECT_TRUE(std::isnan(valueOf(bitsOf(NAN, "F16"), "F16")));
  EXPECT_EQ(valueOf(0x7BFF, "F16"), 65504.0);
  EXPECT_EQ(valueOf(0x0001, "F16"), std::ldexp(1.0, -24));
  EXPECT_EQ(valueOf(0xFC00, "F16"), -INFINITY);
}

TEST(SafetensorsConversion, RoundsBFloat16ToNearestEven) {
  EXPECT_EQ(bitsOf(1.0, "BF16"), 0x3F80u);
  EXPECT_EQ(bitsOf(M_PI, "BF16"), 0x4049u);
  EXPECT_EQ(bitsOf(-1.0 - std::ldexp(1.0, -8), "BF16"), 0xBF80u);
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(3.0, -8), "BF16"), 0x3F82u);
  EXPECT_EQ(bitsOf(1e39, "BF16"), 0x7F80u);
  EXPECT_EQ(valueOf(0x7F7F, "BF16"), std::ldexp(255.0, 120));
  EXPECT_EQ(valueOf(0x0001, "BF16"), std::ldexp(1.0, -133));
}

TEST(SafetensorsConversion, RefusesLossyIntegerConversions) {
  auto half = fromDoubles({0.5}, {1}, "I32");
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().find("not an integer that fits in I32"),
            std::string::npos);
  EXPECT_FALSE(fromDoubles({2147483648.0}, {1}, "I32"));
  EXPECT_FALSE(fromDoubles({NAN}, {1}, "I64"));
  EXPECT_TRUE(fromDoubles({-9223372036854775808.0}, {1}, "I64"));

  auto misfit = fromDoubles({1, 2, 3}, {2, 2}, "F32");
  ASSERT_FALSE(misfit);
  EXPECT_NE(misfit.error().find("3 values do not fill shape [2, 2]"),
            std::string::npos);

  auto bytes = toDoubles(SafeTensor{"U8", {1}, {7}});
  ASSERT_FALSE(bytes);
  EXPECT_NE(bytes.error().find("cannot convert U8"), std::string::npos);
}

} // namespace
