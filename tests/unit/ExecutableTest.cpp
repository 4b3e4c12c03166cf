//===- ExecutableTest.cpp - Loading and validating executables ------------===//

#include "runtime/Executable.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace loom;
using runtime::Buffer;
using runtime::EntryPoint;
using runtime::Kernel;
using runtime::Step;

namespace {

void addBuffer(Executable &exe, const std::string &name, Buffer::Role role,
               Buffer::DType dtype, std::vector<std::string> shape) {
  Buffer *buffer = exe.add_buffers();
  buffer->set_name(name);
  buffer->set_role(role);
  buffer->set_dtype(dtype);
  // Numbers are static dims, anything else a named size: a one-term
  // polynomial over Executable.symbols.
  for (const std::string &dim : shape) {
    if (!dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]))) {
      buffer->add_shape()->set_size(std::stoll(dim));
      continue;
    }
    int symbol = 0;
    while (symbol < exe.symbols_size() && exe.symbols(symbol) != dim)
      ++symbol;
    if (symbol == exe.symbols_size())
      exe.add_symbols(dim);
    runtime::Monomial *term = buffer->add_shape()->mutable_poly()->add_terms();
    term->set_coefficient(1);
    term->add_symbols(symbol);
  }
}

void addStep(EntryPoint *entry, int kernel, std::vector<int> args) {
  Step *step = entry->add_steps();
  step->set_kernel(kernel);
  for (int arg : args)
    step->add_args(arg);
}

/// A small executable that uses every role, two kernels and two entry
/// points; the refusal tests each break one thing in it.
Executable makeExecutable() {
  Executable exe;
  exe.set_format_version(kFormatVersion);
  exe.set_target(Executable::CPU);
  exe.set_config_text("d_model: 8 heads: 2 d_ff: 16");
  runtime::CpuTarget *target = exe.mutable_cpu_target();
  target->set_triple("x86_64-unknown-linux-gnu");
  target->set_cpu("x86-64-v2");
  target->set_level("x86-64-v2");
  for (const char *feature : {"popcnt", "sse4.2"})
    target->add_features(feature);
  target->set_vector_bits(128);
  target->set_alignment(64);

  // Buffers #0 to #9, in the order the steps below refer to them.
  addBuffer(exe, "src_embed.weight", Buffer::PARAMETER, Buffer::F32,
            {"16", "8"});
  addBuffer(exe, "src_embed.weight.grad", Buffer::GRADIENT, Buffer::F32,
            {"16", "8"});
  addBuffer(exe, "src_embed.weight.adam_m", Buffer::OPTIMIZER_STATE,
            Buffer::F32, {"16", "8"});
  addBuffer(exe, "tokens", Buffer::INPUT, Buffer::I64, {"batch", "len"});
  addBuffer(exe, "loss", Buffer::OUTPUT, Buffer::F32, {});
  addBuffer(exe, "hidden", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "len", "8"});
  exe.mutable_buffers(5)->set_arena_offset(0);
  exe.mutable_buffers(5)->set_max_bytes(4096);
  addBuffer(exe, "scale", Buffer::CONSTANT, Buffer::F32, {"2"});
  exe.mutable_buffers(6)->set_data(std::string(8, '\1'));
  addBuffer(exe, "kv_cache", Buffer::INPUT, Buffer::BF16, {"batch", "4", "8"});
  addBuffer(exe, "logits", Buffer::TEMPORARY, Buffer::F16, {"4", "16"});
  exe.mutable_buffers(8)->set_arena_offset(4096);
  exe.mutable_buffers(8)->set_max_bytes(128);
  addBuffer(exe, "mask", Buffer::CONSTANT, Buffer::I1, {"3"});
  exe.mutable_buffers(9)->set_data(std::string("\1\0\1", 3));

  Kernel *fused = exe.add_kernels();
  fused->set_name("fused_softmax");
  fused->set_symbol("loom_kernel_0");
  fused->set_kind(Kernel::GENERATED);
  fused->set_num_args(2);
  Kernel *sgemm = exe.add_kernels();
  sgemm->set_name("sgemm");
  sgemm->set_symbol("sgemm");
  sgemm->set_kind(Kernel::LIBRARY);
  sgemm->set_num_args(3);

  EntryPoint *train = exe.add_entry_points();
  train->set_name("train_step");
  train->set_arena_bytes(8192);
  train->add_inputs(3);
  train->add_outputs(4);
  addStep(train, 1, {3, 0, 5});
  addStep(train, 0, {5, 6});
  addStep(train, 1, {5, 0, 8});
  addStep(train, 1, {8, 9, 4});
  addStep(train, 0, {1, 2});
  train->mutable_steps(0)->add_int_attrs(1);
  train->mutable_steps(0)->add_float_attrs(0.5);

  EntryPoint *encode = exe.add_entry_points();
  encode->set_name("encode");
  encode->set_arena_bytes(4096);
  encode->add_inputs(3);
  encode->add_outputs(7);
  addStep(encode, 1, {3, 0, 5});
  addStep(encode, 0, {5, 7});

  exe.set_code(std::string("\x7f"
                           "ELF fake shared object \0\1\2\3",
                           28));
  exe.set_code_checksum(fnv1a64(exe.code()));
  return exe;
}

/// A fresh directory per test, so tests can run side by side.
class ExecutableFile : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = ::testing::TempDir() + "loom-executable-" + info->name() + "-" +
           std::to_string(::getpid()) + ".loomx";
  }
  void TearDown() override { std::remove(path.c_str()); }

  void writeBytes(const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), bytes.size());
  }

  /// Writes `exe` as is (saveExecutable would refuse it) and returns why
  /// the loader refuses it, or "" when it loads.
  std::string refusal(const Executable &exe) {
    writeBytes(executableFileBytes(exe.SerializeAsString()));
    ErrorOr<Executable> loaded = loadExecutable(path);
    if (loaded)
      return "";
    EXPECT_FALSE(loaded.error().empty());
    EXPECT_EQ(loaded.code(), ErrorCode::Corrupt) << loaded.error();
    // The validator alone must agree with the loader.
    EXPECT_FALSE(validateExecutable(exe).ok());
    return loaded.error();
  }

  std::string path;
};

#define EXPECT_REFUSED(exe, text)                                              \
  EXPECT_NE(refusal(exe).find(text), std::string::npos) << refusal(exe)

TEST(Executable, Fnv1a64MatchesReferenceValues) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST_F(ExecutableFile, RoundTrips) {
  Executable exe = makeExecutable();
  Status valid = validateExecutable(exe);
  ASSERT_TRUE(valid.ok()) << valid.message();
  Status saved = saveExecutable(path, exe);
  ASSERT_TRUE(saved.ok()) << saved.message();
  ErrorOr<Executable> loaded = loadExecutable(path);
  ASSERT_TRUE(loaded) << loaded.error();
  EXPECT_EQ(loaded->SerializeAsString(), exe.SerializeAsString());
  EXPECT_EQ(loaded->entry_points(1).name(), "encode");
  ASSERT_EQ(loaded->buffers(3).shape(0).poly().terms_size(), 1);
  EXPECT_EQ(
      loaded->symbols(loaded->buffers(3).shape(0).poly().terms(0).symbols(0)),
      "batch");
  EXPECT_EQ(loaded->code(), exe.code());
}

TEST_F(ExecutableFile, SaveRefusesAnInvalidExecutable) {
  Executable exe = makeExecutable();
  exe.set_format_version(7);
  Status saved = saveExecutable(path, exe);
  EXPECT_EQ(saved.code(), ErrorCode::Corrupt);
  EXPECT_NE(
      saved.message().find("cannot save '" + path + "': format version 7"),
      std::string::npos)
      << saved.message();
  EXPECT_FALSE(std::ifstream(path).good());
}

TEST_F(ExecutableFile, SaveReportsAnUnwritablePath) {
  Status saved = saveExecutable(path + ".absent/exe.loomx", makeExecutable());
  EXPECT_EQ(saved.code(), ErrorCode::Io);
  EXPECT_NE(saved.message().find("cannot create"), std::string::npos)
      << saved.message();
}

TEST_F(ExecutableFile, RefusesAMissingFile) {
  ErrorOr<Executable> loaded = loadExecutable(path + ".absent");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.code(), ErrorCode::NotFound);
  EXPECT_NE(loaded.error().find("cannot open"), std::string::npos);
}

TEST_F(ExecutableFile, RefusesGarbageAndEmptyFiles) {
  writeBytes("this is not a protobuf message \xff\xff\xff\xff");
  ErrorOr<Executable> loaded = loadExecutable(path);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("not a Loom executable"), std::string::npos)
      << loaded.error();
  // A well-formed header around bytes that are not an Executable.
  writeBytes(executableFileBytes("\xff\xff\xff\xff garbage"));
  loaded = loadExecutable(path);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("does not parse"), std::string::npos)
      << loaded.error();
  writeBytes("");
  loaded = loadExecutable(path);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("not a Loom executable"), std::string::npos)
      << loaded.error();
}

TEST_F(ExecutableFile, RefusesEveryTruncation) {
  std::string bytes = executableFileBytes(makeExecutable().SerializeAsString());
  // The header gives the length, so every proper prefix is short.
  for (size_t n = 0; n < bytes.size(); ++n) {
    writeBytes(bytes.substr(0, n));
    ErrorOr<Executable> loaded = loadExecutable(path);
    EXPECT_FALSE(loaded) << "prefix of " << n << " bytes loaded";
    if (!loaded)
      EXPECT_FALSE(loaded.error().empty());
  }
}

TEST_F(ExecutableFile, RefusesAFlippedBitInTheCode) {
  Executable exe = makeExecutable();
  std::string bytes = exe.SerializeAsString();
  size_t at = bytes.find(exe.code());
  ASSERT_NE(at, std::string::npos);
  bytes[at + 5] ^= 0x10;
  // The file's checksum catches it first...
  writeBytes(executableFileBytes(exe.SerializeAsString()).substr(0, 24) +
             bytes);
  ErrorOr<Executable> loaded = loadExecutable(path);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("checksum mismatch"), std::string::npos)
      << loaded.error();
  // ...and the code's own checksum when the header is rewritten to match.
  writeBytes(executableFileBytes(bytes));
  loaded = loadExecutable(path);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("code checksum mismatch"), std::string::npos)
      << loaded.error();
  EXPECT_NE(loaded.error().find("the file is corrupt"), std::string::npos);
}

TEST_F(ExecutableFile, SurvivesAFlippedBitAnywhere) {
  // Flips that break a string's UTF-8 make protobuf log; keep the test quiet.
  google::protobuf::LogHandler *previous =
      google::protobuf::SetLogHandler(nullptr);
  std::string bytes = executableFileBytes(makeExecutable().SerializeAsString());
  int refused = 0;
  for (size_t i = 0; i < bytes.size() * 8; ++i) {
    std::string flipped = bytes;
    flipped[i / 8] ^= static_cast<char>(1 << (i % 8));
    writeBytes(flipped);
    ErrorOr<Executable> loaded = loadExecutable(path);
    if (loaded)
      EXPECT_TRUE(validateExecutable(*loaded).ok());
    else
      ++refused;
  }
  google::protobuf::SetLogHandler(previous);
  // The header's length and checksum catch every single flipped bit.
  EXPECT_EQ(refused, static_cast<int>(bytes.size() * 8));
}

TEST_F(ExecutableFile, RefusesAnotherFormatVersion) {
  Executable exe = makeExecutable();
  exe.set_format_version(7);
  EXPECT_REFUSED(exe, "format version 7, this runtime reads " +
                          std::to_string(kFormatVersion));
}

TEST_F(ExecutableFile, RefusesASliceOutsideTheArena) {
  // "logits" fits train_step's 8192-byte arena; using it from encode, whose
  // arena is 4096 bytes, must be caught.
  Executable exe = makeExecutable();
  addStep(exe.mutable_entry_points(1), 0, {8, 7});
  EXPECT_REFUSED(exe, "buffer 'logits' (#8) occupies arena bytes [4096, "
                      "4224), outside the 4096-byte arena of entry point "
                      "'encode' (#1)");

  exe = makeExecutable();
  exe.mutable_buffers(5)->set_max_bytes(1 << 20);
  EXPECT_REFUSED(exe, "buffer 'hidden' (#5) occupies arena bytes [0, 1048576)"
                      ", outside the 8192-byte arena of entry point "
                      "'train_step' (#0)");

  // An offset + size that overflows int64 must not wrap into the arena.
  exe = makeExecutable();
  exe.mutable_buffers(5)->set_arena_offset(64);
  exe.mutable_buffers(5)->set_max_bytes(INT64_MAX);
  EXPECT_REFUSED(exe, "outside the 8192-byte arena");
}

TEST_F(ExecutableFile, RefusesATemporaryWithoutASlice) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(5)->clear_max_bytes();
  EXPECT_REFUSED(exe, "buffer 'hidden' (#5) is a temporary without an arena "
                      "slice");
  exe = makeExecutable();
  exe.mutable_buffers(0)->set_arena_offset(0);
  EXPECT_REFUSED(exe, "buffer 'src_embed.weight' (#0) is persistent but has "
                      "an arena slice");
  exe = makeExecutable();
  exe.mutable_buffers(8)->set_max_bytes(64);
  EXPECT_REFUSED(exe, "buffer 'logits' (#8) needs 128 bytes but its slice "
                      "holds 64");
}

TEST_F(ExecutableFile, RefusesAKernelArityMismatch) {
  Executable exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(3)->mutable_args()->RemoveLast();
  EXPECT_REFUSED(exe, "step 3 of 'train_step' calls 'sgemm' with 2 "
                      "arguments, it takes 3");
}

TEST_F(ExecutableFile, RefusesIndicesOutOfRange) {
  Executable exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(1)->set_args(1, 99);
  EXPECT_REFUSED(exe, "step 1 of 'train_step': argument 1 refers to buffer "
                      "99, but 10 buffers exist");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->set_outputs(0, -1);
  EXPECT_REFUSED(exe, "entry point 'encode' (#1): output 0 refers to buffer "
                      "-1");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(0)->set_kernel(2);
  EXPECT_REFUSED(exe, "step 0 of 'encode' calls kernel 2, but 2 kernels "
                      "exist");
}

TEST_F(ExecutableFile, RefusesMismatchedConstantData) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(6)->mutable_data()->push_back('\0');
  EXPECT_REFUSED(exe, "buffer 'scale' (#6) is a constant of 8 bytes but "
                      "carries 9 bytes of data");
  exe = makeExecutable();
  exe.mutable_buffers(9)
      ->mutable_shape(0)
      ->mutable_poly()
      ->add_terms()
      ->add_symbols(0);
  EXPECT_REFUSED(exe, "buffer 'mask' (#9) is a constant with a dynamic");
  exe = makeExecutable();
  exe.mutable_buffers(0)->set_data("xx");
  EXPECT_REFUSED(exe, "carries data but is not a constant");
}

TEST_F(ExecutableFile, RefusesDuplicateAndEmptyNames) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(7)->set_name("hidden");
  EXPECT_REFUSED(exe, "buffer 'hidden' (#7): duplicate buffer name");
  exe = makeExecutable();
  exe.mutable_kernels(1)->set_name("fused_softmax");
  EXPECT_REFUSED(exe, "kernel 'fused_softmax' (#1): duplicate kernel name");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->set_name("train_step");
  EXPECT_REFUSED(exe, "entry point 'train_step' (#1): duplicate entry point "
                      "name");
  exe = makeExecutable();
  exe.mutable_buffers(2)->clear_name();
  EXPECT_REFUSED(exe, "buffer '' (#2) has no name");
}

TEST_F(ExecutableFile, RefusesBadShapesAndEnums) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(0)->mutable_shape(1)->set_size(-8);
  EXPECT_REFUSED(exe, "buffer 'src_embed.weight' (#0): dim 1 has negative "
                      "size -8");
  exe = makeExecutable();
  exe.mutable_buffers(3)->mutable_shape(0)->clear_value();
  EXPECT_REFUSED(exe, "buffer 'tokens' (#3): dim 0 has neither a size nor a "
                      "polynomial");
  exe = makeExecutable();
  exe.mutable_buffers(4)->set_role(static_cast<Buffer::Role>(42));
  EXPECT_REFUSED(exe, "buffer 'loss' (#4) has unknown role 42");
  exe = makeExecutable();
  exe.mutable_buffers(4)->set_dtype(Buffer::DTYPE_UNSPECIFIED);
  EXPECT_REFUSED(exe, "buffer 'loss' (#4) has unknown dtype 0");
  exe = makeExecutable();
  exe.mutable_kernels(0)->set_kind(static_cast<Kernel::Kind>(9));
  EXPECT_REFUSED(exe, "kernel 'fused_softmax' (#0) has unknown kind 9");
  exe = makeExecutable();
  exe.set_target(static_cast<Executable::Target>(5));
  EXPECT_REFUSED(exe, "unknown target 5");
  exe = makeExecutable();
  exe.mutable_entry_points(0)->set_arena_bytes(-1);
  EXPECT_REFUSED(exe, "entry point 'train_step' (#0) has negative "
                      "arena_bytes -1");
}

TEST_F(ExecutableFile, RefusesTheFieldsOfFormatVersion1) {
  // Version 1 had a bare symbol name as a dim (field 2) and a CACHE role
  // (8) that no runtime gave a meaning to; a file that still uses them is
  // refused by name, not run with a dim of 0.
  Executable exe = makeExecutable();
  runtime::Dim *dim = exe.mutable_buffers(3)->mutable_shape(0);
  dim->clear_value();
  dim->GetReflection()->MutableUnknownFields(dim)->AddLengthDelimited(2,
                                                                      "batch");
  EXPECT_REFUSED(exe, "buffer 'tokens' (#3): dim 0 has neither a size nor a "
                      "polynomial");
  exe = makeExecutable();
  exe.mutable_buffers(7)->set_role(static_cast<Buffer::Role>(8));
  EXPECT_REFUSED(exe, "buffer 'kv_cache' (#7) has unknown role 8");
  exe = makeExecutable();
  exe.set_format_version(1);
  EXPECT_REFUSED(exe, "format version 1, this runtime reads");
}

TEST_F(ExecutableFile, RefusesABadCpuTarget) {
  Executable exe = makeExecutable();
  exe.clear_cpu_target();
  EXPECT_REFUSED(exe, "a CPU executable without a cpu_target");
  exe = makeExecutable();
  exe.mutable_cpu_target()->add_features("warp-drive");
  EXPECT_REFUSED(exe, "cpu_target records CPU feature 'warp-drive'");
  exe = makeExecutable();
  exe.mutable_cpu_target()->set_alignment(48);
  EXPECT_REFUSED(exe, "cpu_target alignment 48");
  exe = makeExecutable();
  exe.mutable_buffers(8)->set_arena_offset(4100);
  exe.mutable_entry_points(0)->set_arena_bytes(8300);
  EXPECT_REFUSED(exe, "not a multiple of the cpu_target alignment 64");
}

} // namespace
