//===- ExecutableTest.cpp - Loading and validating executables ------------===//

#include "runtime/Executable.h"
#include "TestUtil.h"
#include "abi/LibraryCalls.h"
#include "runtime/Program.h"
#include "runtime/SizePolynomial.h"

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

/// A dim of `buffer` as the polynomial `terms`: {coefficient, symbols...}.
void setPoly(Buffer *buffer, int dim, std::vector<std::vector<int64_t>> terms) {
  runtime::SizePoly *poly = buffer->mutable_shape(dim)->mutable_poly();
  poly->Clear();
  for (const std::vector<int64_t> &term : terms) {
    runtime::Monomial *monomial = poly->add_terms();
    monomial->set_coefficient(term[0]);
    for (size_t i = 1; i < term.size(); ++i)
      monomial->add_symbols(static_cast<int32_t>(term[i]));
  }
}

/// A generated kernel's signature: per argument its dtype, dims (-1 for a
/// size read at run time) and whether it writes it, each accessed through
/// its own shape.
void addGenerated(
    Executable &exe, const std::string &name,
    std::vector<std::pair<Buffer::DType, std::vector<int64_t>>> args,
    int numWritten) {
  Kernel *kernel = exe.add_kernels();
  kernel->set_name(name);
  kernel->set_symbol(name);
  kernel->set_kind(Kernel::GENERATED);
  kernel->set_num_args(static_cast<int>(args.size()));
  kernel->set_parallel(true);
  for (size_t a = 0; a < args.size(); ++a) {
    runtime::KernelArg *arg = kernel->add_args();
    arg->set_dtype(args[a].first);
    arg->set_written(a + numWritten >= args.size());
    runtime::Access *access = kernel->add_accesses();
    access->set_arg(static_cast<int>(a));
    for (size_t d = 0; d < args[a].second.size(); ++d) {
      int64_t size = args[a].second[d];
      arg->add_dims(size);
      if (size >= 0)
        access->add_dims()->set_size(size);
      else
        access->add_dims()->set_arg_dim(static_cast<int32_t>(d));
    }
  }
}

void addLibrary(Executable &exe, const std::string &symbol, int numArgs) {
  Kernel *kernel = exe.add_kernels();
  kernel->set_name(symbol + "." + std::to_string(numArgs));
  kernel->set_symbol(symbol);
  kernel->set_kind(Kernel::LIBRARY);
  kernel->set_num_args(numArgs);
}

// The buffers of makeExecutable(), by index.
enum : int {
  kWeight,       // src_embed.weight, a parameter [16, 8]
  kMoment,       // exp_avg.src_embed.weight, optimizer state [16, 8]
  kTokens,       // train_step/input/tokens, i32 [batch, len]
  kLoss,         // train_step/output/loss, f32 scalar
  kHidden,       // train_step/%0, a temporary [batch, len, 8] at 0
  kScale,        // scale, a constant f32 [2]
  kEncodeTokens, // encode/input/tokens, i32 [batch, len]
  kMemory,       // encode/output/memory, f32 [batch, len, 8]
  kNewWeight,    // train_step/output/param.src_embed.weight
  kNewMoment,    // train_step/output/exp_avg.src_embed.weight
  kMask,         // mask, a constant i1 [3]
  kActivated,    // train_step/%1, a temporary [batch, len, 8] at 2048
  kEncodeHidden, // encode/%0, a temporary [batch, len, 8] at 0
  kRows,         // train_step/%rows, rows 8 to 16 of the weight (a view)
  kNumBuffers
};
// Its kernels.
enum : int { kGather, kActivate, kUpdate, kReduce };

/// A small executable as the writer makes them: every role but gradients,
/// library and generated kernels, a view, state written over by
/// @train_step, and two entry points; the refusal tests each break one
/// thing in it. The bounds are max-tokens 64, max-len 16, max-batch 8, so
/// a [batch, len, 8] f32 temporary needs 64 * 8 * 4 = 2048 bytes.
Executable makeExecutable() {
  Executable exe;
  exe.set_format_version(kFormatVersion);
  exe.set_target(Executable::CPU);
  exe.set_config_text("d_model: 8 heads: 2 d_ff: 16");
  exe.set_max_tokens(64);
  exe.set_max_len(16);
  exe.set_max_batch(8);
  runtime::CpuTarget *target = exe.mutable_cpu_target();
  target->set_triple("x86_64-unknown-linux-gnu");
  target->set_cpu("x86-64-v2");
  target->set_level("x86-64-v2");
  for (const char *feature : {"popcnt", "sse4.2"})
    target->add_features(feature);
  target->set_vector_bits(128);
  target->set_alignment(64);

  addBuffer(exe, "src_embed.weight", Buffer::PARAMETER, Buffer::F32,
            {"16", "8"});
  addBuffer(exe, "exp_avg.src_embed.weight", Buffer::OPTIMIZER_STATE,
            Buffer::F32, {"16", "8"});
  addBuffer(exe, "train_step/input/tokens", Buffer::INPUT, Buffer::I32,
            {"batch", "len"});
  addBuffer(exe, "train_step/output/loss", Buffer::OUTPUT, Buffer::F32, {});
  addBuffer(exe, "train_step/%0", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "len", "8"});
  exe.mutable_buffers(kHidden)->set_arena_offset(0);
  exe.mutable_buffers(kHidden)->set_max_bytes(2048);
  addBuffer(exe, "scale", Buffer::CONSTANT, Buffer::F32, {"2"});
  exe.mutable_buffers(kScale)->set_data(std::string(8, '\1'));
  addBuffer(exe, "encode/input/tokens", Buffer::INPUT, Buffer::I32,
            {"batch", "len"});
  addBuffer(exe, "encode/output/memory", Buffer::OUTPUT, Buffer::F32,
            {"batch", "len", "8"});
  addBuffer(exe, "train_step/output/param.src_embed.weight", Buffer::OUTPUT,
            Buffer::F32, {"16", "8"});
  addBuffer(exe, "train_step/output/exp_avg.src_embed.weight", Buffer::OUTPUT,
            Buffer::F32, {"16", "8"});
  addBuffer(exe, "mask", Buffer::CONSTANT, Buffer::I1, {"3"});
  exe.mutable_buffers(kMask)->set_data(std::string("\1\0\1", 3));
  addBuffer(exe, "train_step/%1", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "len", "8"});
  exe.mutable_buffers(kActivated)->set_arena_offset(2048);
  exe.mutable_buffers(kActivated)->set_max_bytes(2048);
  addBuffer(exe, "encode/%0", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "len", "8"});
  exe.mutable_buffers(kEncodeHidden)->set_arena_offset(0);
  exe.mutable_buffers(kEncodeHidden)->set_max_bytes(2048);
  addBuffer(exe, "train_step/%rows", Buffer::PARAMETER, Buffer::F32,
            {"8", "8"});
  exe.mutable_buffers(kRows)->set_view_of(kWeight);
  exe.mutable_buffers(kRows)->set_view_offset(8 * 8 * 4);

  addLibrary(exe, "gather", 3);
  addGenerated(exe, "loom_region_0",
               {{Buffer::F32, {-1, -1, 8}}, {Buffer::F32, {-1, -1, 8}}}, 1);
  addGenerated(exe, "loom_region_1",
               {{Buffer::F32, {16, 8}},
                {Buffer::F32, {16, 8}},
                {Buffer::F32, {16, 8}},
                {Buffer::F32, {16, 8}}},
               2);
  // A sum of every element into a scalar.
  addGenerated(exe, "loom_region_2",
               {{Buffer::F32, {-1, -1, 8}}, {Buffer::F32, {}}}, 1);

  EntryPoint *train = exe.add_entry_points();
  train->set_name("train_step");
  train->set_arena_bytes(4096);
  for (int input : {kWeight, kMoment, kTokens})
    train->add_inputs(input);
  for (int output : {kLoss, kNewWeight, kNewMoment})
    train->add_outputs(output);
  addStep(train, kGather, {kWeight, kTokens, kHidden});
  addStep(train, kActivate, {kHidden, kActivated});
  addStep(train, kReduce, {kActivated, kLoss});
  // The optimizer, in place over the state it replaces.
  addStep(train, kUpdate, {kWeight, kMoment, kNewWeight, kNewMoment});

  EntryPoint *encode = exe.add_entry_points();
  encode->set_name("encode");
  encode->set_arena_bytes(2048);
  encode->add_inputs(kWeight);
  encode->add_inputs(kEncodeTokens);
  encode->add_outputs(kMemory);
  addStep(encode, kGather, {kWeight, kEncodeTokens, kEncodeHidden});
  addStep(encode, kActivate, {kEncodeHidden, kMemory});

  exe.set_code(std::string("\x7f"
                           "ELF fake shared object \0\1\2\3",
                           28));
  exe.set_code_checksum(fnv1a64(exe.code()));
  return exe;
}

/// makeExecutable() for a GPU: its generated kernels say how they are
/// launched, and its code is a cubin (an ELF file) with PTX beside it.
Executable makeCudaExecutable() {
  Executable exe = makeExecutable();
  test::retargetToCuda(exe);
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
  const Buffer &tokens = loaded->buffers(kTokens);
  ASSERT_EQ(tokens.shape(0).poly().terms_size(), 1);
  EXPECT_EQ(loaded->symbols(tokens.shape(0).poly().terms(0).symbols(0)),
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
  // train_step/%1 fits train_step's 4096-byte arena; using it from encode,
  // whose arena is 2048 bytes, must be caught.
  Executable exe = makeExecutable();
  addStep(exe.mutable_entry_points(1), kActivate, {kActivated, kMemory});
  EXPECT_REFUSED(exe, "buffer 'train_step/%1' (#11) occupies arena bytes "
                      "[2048, 4096), outside the 2048-byte arena of entry "
                      "point 'encode' (#1)");

  exe = makeExecutable();
  exe.mutable_buffers(kHidden)->set_max_bytes(1 << 20);
  EXPECT_REFUSED(exe, "buffer 'train_step/%0' (#4) occupies arena bytes [0, "
                      "1048576), outside the 4096-byte arena of entry point "
                      "'train_step' (#0)");

  // An offset + size that overflows int64 must not wrap into the arena.
  exe = makeExecutable();
  exe.mutable_buffers(kHidden)->set_arena_offset(64);
  exe.mutable_buffers(kHidden)->set_max_bytes(INT64_MAX);
  EXPECT_REFUSED(exe, "outside the 4096-byte arena");
}

TEST_F(ExecutableFile, RefusesATemporaryWithoutASlice) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(kHidden)->clear_max_bytes();
  EXPECT_REFUSED(exe, "buffer 'train_step/%0' (#4) is a temporary without an "
                      "arena slice");
  exe = makeExecutable();
  exe.mutable_buffers(kWeight)->set_arena_offset(0);
  EXPECT_REFUSED(exe, "buffer 'src_embed.weight' (#0) is persistent but has "
                      "an arena slice");
  // A static shape is held to its slice with the file's structure.
  exe = makeExecutable();
  exe.mutable_buffers(kHidden)->mutable_shape(0)->set_size(2);
  exe.mutable_buffers(kHidden)->mutable_shape(1)->set_size(4);
  exe.mutable_buffers(kHidden)->set_max_bytes(64);
  EXPECT_REFUSED(exe, "buffer 'train_step/%0' (#4) needs 256 bytes but its "
                      "slice holds 64");
}

TEST_F(ExecutableFile, RefusesAKernelArityMismatch) {
  Executable exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(0)->mutable_args()->RemoveLast();
  EXPECT_REFUSED(exe, "step 0 of 'train_step' calls 'gather.3' with 2 "
                      "arguments, it takes 3");
}

TEST_F(ExecutableFile, RefusesIndicesOutOfRange) {
  Executable exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(1)->set_args(1, 99);
  EXPECT_REFUSED(exe, "step 1 of 'train_step': argument 1 refers to buffer "
                      "99, but 14 buffers exist");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->set_outputs(0, -1);
  EXPECT_REFUSED(exe, "entry point 'encode' (#1): output 0 refers to buffer "
                      "-1");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(0)->set_kernel(4);
  EXPECT_REFUSED(exe, "step 0 of 'encode' calls kernel 4, but 4 kernels "
                      "exist");
}

TEST_F(ExecutableFile, RefusesMismatchedConstantData) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(kScale)->mutable_data()->push_back('\0');
  EXPECT_REFUSED(exe, "buffer 'scale' (#5) is a constant of 8 bytes but "
                      "carries 9 bytes of data");
  exe = makeExecutable();
  exe.mutable_buffers(kMask)
      ->mutable_shape(0)
      ->mutable_poly()
      ->add_terms()
      ->add_symbols(0);
  EXPECT_REFUSED(exe, "buffer 'mask' (#10) is a constant with a dynamic");
  exe = makeExecutable();
  exe.mutable_buffers(kWeight)->set_data("xx");
  EXPECT_REFUSED(exe, "carries data but is not a constant");
}

TEST_F(ExecutableFile, RefusesDuplicateAndEmptyNames) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(kMemory)->set_name("train_step/%0");
  EXPECT_REFUSED(exe, "buffer 'train_step/%0' (#7): duplicate buffer name");
  exe = makeExecutable();
  exe.mutable_kernels(kActivate)->set_name("gather.3");
  EXPECT_REFUSED(exe, "kernel 'gather.3' (#1): duplicate kernel name");
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
  exe.mutable_buffers(kWeight)->mutable_shape(1)->set_size(-8);
  EXPECT_REFUSED(exe, "buffer 'src_embed.weight' (#0): dim 1 has negative "
                      "size -8");
  exe = makeExecutable();
  exe.mutable_buffers(kTokens)->mutable_shape(0)->clear_value();
  EXPECT_REFUSED(exe, "buffer 'train_step/input/tokens' (#2): dim 0 has "
                      "neither a size nor a polynomial");
  exe = makeExecutable();
  exe.mutable_buffers(kLoss)->set_role(static_cast<Buffer::Role>(42));
  EXPECT_REFUSED(exe, "buffer 'train_step/output/loss' (#3) has unknown role "
                      "42");
  exe = makeExecutable();
  exe.mutable_buffers(kLoss)->set_dtype(Buffer::DTYPE_UNSPECIFIED);
  EXPECT_REFUSED(exe, "buffer 'train_step/output/loss' (#3) has unknown "
                      "dtype 0");
  exe = makeExecutable();
  exe.mutable_kernels(kGather)->set_kind(static_cast<Kernel::Kind>(9));
  EXPECT_REFUSED(exe, "kernel 'gather.3' (#0) has unknown kind 9");
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
  runtime::Dim *dim = exe.mutable_buffers(kTokens)->mutable_shape(0);
  dim->clear_value();
  dim->GetReflection()->MutableUnknownFields(dim)->AddLengthDelimited(2,
                                                                      "batch");
  EXPECT_REFUSED(exe, "buffer 'train_step/input/tokens' (#2): dim 0 has "
                      "neither a size nor a polynomial");
  exe = makeExecutable();
  exe.mutable_buffers(kMemory)->set_role(static_cast<Buffer::Role>(8));
  EXPECT_REFUSED(exe, "buffer 'encode/output/memory' (#7) has unknown role "
                      "8");
  exe = makeExecutable();
  exe.set_format_version(1);
  EXPECT_REFUSED(exe, "format version 1, this runtime reads");
}

// Found by fuzz/ExecutableFuzzer.cpp: a view starting at an odd byte made
// the linear kernel load misaligned floats (UBSan).
TEST_F(ExecutableFile, RefusesAViewThatSplitsAnElement) {
  Executable exe = makeExecutable();
  addBuffer(exe, "src_embed.weight.rows", Buffer::PARAMETER, Buffer::F32,
            {"4", "8"});
  const int view = exe.buffers_size() - 1;
  exe.mutable_buffers(view)->set_view_of(0);
  exe.mutable_buffers(view)->set_view_offset(32);
  EXPECT_EQ(refusal(exe), "");
  exe.mutable_buffers(view)->set_view_offset(27);
  EXPECT_REFUSED(exe,
                 "buffer 'src_embed.weight.rows' (#" + std::to_string(view) +
                     ") starts at byte 27 "
                     "of the buffer it views, not a multiple of its 4-byte "
                     "elements");
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
  exe.mutable_buffers(kActivated)->set_arena_offset(2052);
  exe.mutable_entry_points(0)->set_arena_bytes(4200);
  EXPECT_REFUSED(exe, "not a multiple of the cpu_target alignment 64");
}

TEST_F(ExecutableFile, LoadsACudaExecutable) {
  Executable exe = makeCudaExecutable();
  EXPECT_EQ(refusal(exe), "");
  // What the CPU path checks holds here too.
  exe.mutable_buffers(kActivated)->set_arena_offset(2052);
  exe.mutable_entry_points(0)->set_arena_bytes(4200);
  EXPECT_REFUSED(exe, "not a multiple of the cuda_target alignment 64");
}

TEST_F(ExecutableFile, RefusesABadCudaTarget) {
  Executable exe = makeCudaExecutable();
  exe.clear_cuda_target();
  EXPECT_REFUSED(exe, "a CUDA executable without a cuda_target");
  for (const char *arch : {"", "sm_", "sm_9x", "compute_90", "sm_123456789"}) {
    exe = makeCudaExecutable();
    exe.mutable_cuda_target()->set_arch(arch);
    EXPECT_REFUSED(exe, "is not of the form sm_<number>");
  }
  exe = makeCudaExecutable();
  exe.mutable_cuda_target()->clear_ptx();
  EXPECT_REFUSED(exe, "cuda_target has no PTX");
  for (int alignment : {0, 8, 48}) {
    exe = makeCudaExecutable();
    exe.mutable_cuda_target()->set_alignment(alignment);
    EXPECT_REFUSED(exe, "cuda_target alignment " + std::to_string(alignment));
  }
  exe = makeCudaExecutable();
  exe.set_code(".version 8.0\n");
  exe.set_code_checksum(fnv1a64(exe.code()));
  EXPECT_REFUSED(exe, "is not a cubin");
  // Each target's record belongs to its own executables.
  exe = makeCudaExecutable();
  *exe.mutable_cpu_target() = makeExecutable().cpu_target();
  EXPECT_REFUSED(exe, "an executable for CUDA with a cpu_target");
  exe = makeExecutable();
  *exe.mutable_cuda_target() = makeCudaExecutable().cuda_target();
  EXPECT_REFUSED(exe, "an executable for CPU with a cuda_target");
}

TEST_F(ExecutableFile, RefusesAGpuKernelItCannotLaunch) {
  Executable exe = makeCudaExecutable();
  exe.mutable_kernels(kActivate)->clear_cuda_launch();
  EXPECT_REFUSED(exe, "without a cuda_launch");
  exe = makeCudaExecutable();
  exe.mutable_kernels(kGather)->mutable_cuda_launch()->set_block_threads(256);
  EXPECT_REFUSED(exe, "has a cuda_launch, which only generated kernels");
  exe = makeExecutable();
  exe.mutable_kernels(kActivate)->mutable_cuda_launch()->set_block_threads(32);
  EXPECT_REFUSED(exe, "has a cuda_launch, which only generated kernels");
  exe = makeCudaExecutable();
  exe.mutable_kernels(kActivate)->mutable_cuda_launch()->set_shape(
      runtime::CudaLaunch::SHAPE_UNSPECIFIED);
  EXPECT_REFUSED(exe, "unknown launch shape 0");
  for (int threads : {0, 16, 100, 2048}) {
    exe = makeCudaExecutable();
    exe.mutable_kernels(kActivate)->mutable_cuda_launch()->set_block_threads(
        threads);
    EXPECT_REFUSED(exe, "launches blocks of " + std::to_string(threads) +
                            " threads");
  }
}

//===----------------------------------------------------------------------===//
// Semantic validation: what the parts of a well-formed file mean
//===----------------------------------------------------------------------===//

TEST_F(ExecutableFile, RefusesAnOutputThatIsNotAnOutputBuffer) {
  // Returning the optimizer state itself would hand the caller the
  // session's own memory, and a kernel would write it outside @train_step.
  Executable exe = makeExecutable();
  exe.mutable_entry_points(0)->set_outputs(0, kMoment);
  EXPECT_REFUSED(exe, "entry point 'train_step' (#0): output 0, buffer "
                      "'exp_avg.src_embed.weight' (#1), is optimizer state, "
                      "not an output of its own");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->set_outputs(0, kRows);
  EXPECT_REFUSED(exe, "output 0, buffer 'train_step/%rows' (#13), is a "
                      "parameter view");
  // Nor may two entry points share one.
  exe = makeExecutable();
  exe.mutable_entry_points(1)->add_outputs(kLoss);
  EXPECT_REFUSED(exe, "is an output of entry point 'train_step' (#0) too");
}

TEST_F(ExecutableFile, RefusesAnInputThatIsNotAnArgument) {
  Executable exe = makeExecutable();
  exe.mutable_entry_points(1)->set_inputs(1, kEncodeHidden);
  EXPECT_REFUSED(exe, "entry point 'encode' (#1): input 1, buffer "
                      "'encode/%0' (#12), is a temporary");
  // An input's dims are static or one named size, which the call binds.
  exe = makeExecutable();
  setPoly(exe.mutable_buffers(kEncodeTokens), 1, {{2, 1}});
  EXPECT_REFUSED(exe, "buffer 'encode/input/tokens' (#6): dim 1 of an input "
                      "is 2*len, neither a size nor one named size");
}

TEST_F(ExecutableFile, RefusesADimNegativeForSomeSizes) {
  // len - 2*batch is -1 at batch = len = 1.
  Executable exe = makeExecutable();
  setPoly(exe.mutable_buffers(kHidden), 1, {{1, 1}, {-2, 0}});
  EXPECT_REFUSED(exe, "buffer 'train_step/%0' (#4): dim 1, len - 2*batch, is "
                      "negative for some sizes >= 1");
  // A coefficient alone: -batch.
  exe = makeExecutable();
  setPoly(exe.mutable_buffers(kMemory), 0, {{-1, 0}});
  EXPECT_REFUSED(exe, "dim 0, -batch, is negative for some sizes >= 1");
}

TEST_F(ExecutableFile, AcceptsNegativeCoefficientsThatStayNonNegative) {
  // The writer flattens [batch, len - 1] to batch*len - batch: negative
  // coefficients, never a negative size.
  Executable exe = makeExecutable();
  addBuffer(exe, "train_step/%flat", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "8"});
  Buffer *flat = exe.mutable_buffers(kNumBuffers);
  setPoly(flat, 0, {{1, 0, 1}, {-1, 0}});
  flat->set_arena_offset(0);
  flat->set_max_bytes(2048);
  Status valid = validateExecutable(exe);
  EXPECT_TRUE(valid.ok()) << valid.message();
  // len*len - 2*len + 1 = (len - 1)^2 as well.
  setPoly(flat, 0, {{1, 1, 1}, {-2, 1}, {1}});
  flat->set_max_bytes(1 << 14);
  valid = validateExecutable(exe);
  EXPECT_TRUE(valid.ok()) << valid.message();
}

TEST(SizePolynomial, ProvesNonNegativityBySubstitution) {
  auto dim = [](std::vector<std::vector<int64_t>> terms) {
    runtime::Dim d;
    for (const auto &term : terms) {
      runtime::Monomial *m = d.mutable_poly()->add_terms();
      m->set_coefficient(term[0]);
      for (size_t i = 1; i < term.size(); ++i)
        m->add_symbols(static_cast<int32_t>(term[i]));
    }
    return *runtime::SizePolynomial::of(d);
  };
  auto nonNegative = [](const runtime::SizePolynomial &p) {
    return p.nonNegativeForPositiveSizes().value_or(false);
  };
  EXPECT_TRUE(nonNegative(dim({{1, 0, 1}, {-1, 0}})));  // a*b - a
  EXPECT_TRUE(nonNegative(dim({{1, 0, 0}, {-1, 0}})));  // a^2 - a
  EXPECT_TRUE(nonNegative(dim({{1, 0}, {-1}})));        // a - 1
  EXPECT_FALSE(nonNegative(dim({{1, 0}, {-2}})));       // a - 2
  EXPECT_FALSE(nonNegative(dim({{1, 0}, {-1, 1}})));    // a - b
  EXPECT_FALSE(nonNegative(dim({{1, 0, 1}, {-2, 0}}))); // a*b - 2a
  // Like terms merge; the names print as the planner writes them.
  runtime::SizePolynomial p = dim({{1, 1, 0}, {-1, 0}, {2, 0, 1}});
  EXPECT_EQ(p.str({"batch", "len"}), "3*batch*len - batch");
  // Coefficients whose expansion overflows are not proven.
  EXPECT_FALSE(dim({{INT64_MAX, 0, 0, 0, 0}, {-1}})
                   .nonNegativeForPositiveSizes()
                   .has_value());
  // Nor are monomials of too many factors taken at all.
  runtime::Dim huge;
  runtime::Monomial *m = huge.mutable_poly()->add_terms();
  m->set_coefficient(1);
  for (int i = 0; i < 1000; ++i)
    m->add_symbols(0);
  EXPECT_FALSE(runtime::SizePolynomial::of(huge).has_value());
}

TEST_F(ExecutableFile, RefusesATemporaryTooLargeForItsSliceAtTheBounds) {
  // [batch, len, 8] f32 at 64 tokens needs 2048 bytes; only a static shape
  // was held to its slice before.
  Executable exe = makeExecutable();
  exe.mutable_buffers(kActivated)->set_max_bytes(1024);
  EXPECT_REFUSED(exe, "buffer 'train_step/%1' (#11) needs 2048 bytes at the "
                      "bounds (max-tokens 64, max-len 16, max-batch 8) but "
                      "its slice holds 1024");
  // len*len is bounded by max-len twice: 16 * 16 * 8 * 4 bytes.
  exe = makeExecutable();
  setPoly(exe.mutable_buffers(kActivated), 0, {{1, 1}});
  EXPECT_REFUSED(exe, "needs 8192 bytes at the bounds");
}

TEST_F(ExecutableFile, RefusesAViewOutsideItsBase) {
  // Rows 8 to 16 of a 16-row weight fit; from byte 260 they do not.
  Executable exe = makeExecutable();
  exe.mutable_buffers(kRows)->set_view_offset(260);
  EXPECT_REFUSED(exe, "buffer 'train_step/%rows' (#13) (4-byte elements from "
                      "byte 260) does not lie inside buffer "
                      "'src_embed.weight' (#0)");
  // A view of a dynamic input: the tokens flattened fit from byte 0 only.
  exe = makeExecutable();
  addBuffer(exe, "train_step/%flat", Buffer::INPUT, Buffer::I32, {"batch"});
  Buffer *flat = exe.mutable_buffers(kNumBuffers);
  setPoly(flat, 0, {{1, 0, 1}});
  flat->set_view_of(kTokens);
  Status valid = validateExecutable(exe);
  EXPECT_TRUE(valid.ok()) << valid.message();
  flat->set_view_offset(4);
  EXPECT_REFUSED(exe, "does not lie inside buffer 'train_step/input/tokens'");
  // A view has its base's role, and views only what the runtime places.
  exe = makeExecutable();
  exe.mutable_buffers(kRows)->set_role(Buffer::OPTIMIZER_STATE);
  EXPECT_REFUSED(exe, "(#13) is optimizer state but views buffer "
                      "'src_embed.weight' (#0), which is a parameter");
  exe = makeExecutable();
  exe.mutable_buffers(kRows)->set_view_of(kScale);
  EXPECT_REFUSED(exe, "is a view of buffer 'scale' (#5), which is a constant");
}

TEST_F(ExecutableFile, RefusesAStepArgumentOfAnotherDTypeRankOrRole) {
  // The generated kernel was compiled for f32 [?, ?, 8].
  Executable exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(1)->set_args(0, kEncodeTokens);
  EXPECT_REFUSED(exe, "step 1 of 'encode': argument 0 (buffer "
                      "'encode/input/tokens' (#6)) is I32, but kernel "
                      "'loom_region_0' (#1) was compiled for F32");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(1)->set_args(0, kWeight);
  EXPECT_REFUSED(exe, "argument 0 (buffer 'src_embed.weight' (#0)) has rank "
                      "2, but kernel 'loom_region_0' (#1) was compiled for "
                      "rank 3");
  exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(3)->set_args(0, kRows);
  EXPECT_REFUSED(exe, "argument 0 (buffer 'train_step/%rows' (#13)): dim 0 "
                      "is 8, but kernel 'loom_region_1' (#2) was compiled "
                      "for 16");
  // A library kernel's signature: gather's ids are integers.
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(0)->set_args(1, kEncodeHidden);
  EXPECT_REFUSED(exe, "step 0 of 'encode' (kernel 'gather.3' (#0)): argument "
                      "1 (buffer 'encode/%0' (#12)), tensor 'ids', is f32, "
                      "which gather does not take there");
  // Buffers of another entry point are not there when this one runs.
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(0)->set_args(1, kTokens);
  EXPECT_REFUSED(exe, "step 0 of 'encode': argument 1, buffer "
                      "'train_step/input/tokens' (#2), is an input entry "
                      "point 'encode' (#1) does not take");
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(1)->set_args(1, kNewWeight);
  EXPECT_NE(refusal(exe), "");
}

TEST_F(ExecutableFile, RefusesAReadOnlyBufferWritten) {
  Executable exe = makeExecutable();
  // The optimizer's kernel over the parameter itself, not over the output
  // that the runtime places on it.
  exe.mutable_entry_points(0)->mutable_steps(3)->set_args(2, kWeight);
  EXPECT_REFUSED(exe, "step 3 of 'train_step': argument 2, buffer "
                      "'src_embed.weight' (#0), is a parameter, which kernel "
                      "'loom_region_1' (#2) would write");
  exe = makeExecutable();
  exe.mutable_buffers(kScale)->mutable_shape(0)->set_size(16);
  exe.mutable_buffers(kScale)->add_shape()->set_size(8);
  exe.mutable_buffers(kScale)->set_data(std::string(16 * 8 * 4, '\0'));
  exe.mutable_entry_points(0)->mutable_steps(3)->set_args(3, kScale);
  EXPECT_REFUSED(exe, "argument 3, buffer 'scale' (#5), is a constant, which "
                      "kernel 'loom_region_1' (#2) would write");
  exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_steps(0)->set_args(2, kTokens);
  EXPECT_NE(refusal(exe), "");
}

TEST_F(ExecutableFile, RefusesStateWrittenOutsideTheTrainStep) {
  // An output named after a parameter is written over it by the runtime:
  // @encode must not update the model.
  Executable exe = makeExecutable();
  exe.mutable_buffers(kMemory)->set_name(
      "encode/output/param.src_embed.weight");
  EXPECT_REFUSED(exe, "entry point 'encode' (#1): output 0, buffer "
                      "'encode/output/param.src_embed.weight' (#7), would be "
                      "written over buffer 'src_embed.weight' (#0), a "
                      "parameter, but only @train_step updates state");
  // The updated state must match what it replaces and be taken.
  exe = makeExecutable();
  exe.mutable_buffers(kNewMoment)->set_dtype(Buffer::F16);
  EXPECT_REFUSED(exe, "whose dtype or shape differs");
  exe = makeExecutable();
  exe.mutable_entry_points(0)->mutable_inputs()->SwapElements(1, 2);
  exe.mutable_entry_points(0)->mutable_inputs()->RemoveLast();
  EXPECT_REFUSED(exe, "which entry point 'train_step' (#0) does not take");
  // A parameter is written by param.<name>, never by its own name.
  exe = makeExecutable();
  exe.mutable_buffers(kNewWeight)
      ->set_name("train_step/output/src_embed.weight");
  EXPECT_REFUSED(exe, "a parameter is written by an output named param.");
}

TEST_F(ExecutableFile, RefusesLibraryAttributesThatDoNotFitTheShapes) {
  Executable exe = makeExecutable();
  addLibrary(exe, "slice", 2);
  addBuffer(exe, "encode/%1", Buffer::TEMPORARY, Buffer::F32,
            {"batch", "len", "4"});
  Buffer *half = exe.mutable_buffers(kNumBuffers);
  half->set_arena_offset(2048);
  half->set_max_bytes(1024);
  exe.mutable_entry_points(1)->set_arena_bytes(4096);
  addStep(exe.mutable_entry_points(1), 4, {kEncodeHidden, kNumBuffers});
  Step *slice = exe.mutable_entry_points(1)->mutable_steps(2);
  for (int64_t x : loom::abi::SliceCall{2, 0, 4}.encode().ints)
    slice->add_int_attrs(x);
  Status valid = validateExecutable(exe);
  EXPECT_TRUE(valid.ok()) << valid.message();
  // Dim 3 of a rank-3 tensor.
  slice->set_int_attrs(0, 3);
  EXPECT_REFUSED(exe, "step 2 of 'encode' (kernel 'slice.2' (#4)): slice: "
                      "dim 3 is outside the rank 3 of its input");
  // Attributes that do not decode at all.
  slice->add_int_attrs(7);
  EXPECT_REFUSED(exe, "step 2 of 'encode' (kernel 'slice.2' (#4)): expected "
                      "3 integer and 0 float attributes");
  // A generated kernel takes none.
  exe = makeExecutable();
  exe.mutable_entry_points(1)->mutable_steps(1)->add_int_attrs(1);
  EXPECT_REFUSED(exe, "passes attributes to generated kernel");
}

TEST_F(ExecutableFile, RefusesLinedUpSizesThatDiffer) {
  // An elementwise kernel over [batch, len, 8] and [len, batch, 8]: unless
  // batch = len, one of them is walked past its end.
  Executable exe = makeExecutable();
  Buffer *memory = exe.mutable_buffers(kMemory);
  setPoly(memory, 0, {{1, 1}});
  setPoly(memory, 1, {{1, 0}});
  EXPECT_REFUSED(exe, "kernel 'loom_region_0' (#1) lines up argument 1 "
                      "(buffer 'encode/output/memory' (#7)) (size len) with "
                      "argument 0 (buffer 'encode/%0' (#12)) (size batch) "
                      "along dim 0 of its domain");
}

TEST_F(ExecutableFile, RefusesAResultOverlappingAnotherArgument) {
  // train_step/%1 moved half over train_step/%0, which the same step reads.
  Executable exe = makeExecutable();
  exe.mutable_buffers(kActivated)->set_arena_offset(1024);
  EXPECT_REFUSED(exe, "step 1 of 'train_step': kernel 'loom_region_0' (#1) "
                      "writes argument 1, buffer 'train_step/%1' (#11), over "
                      "the memory of argument 0, buffer 'train_step/%0' (#4)");
  // Exactly over it is in place, which a generated kernel may do.
  exe.mutable_buffers(kActivated)->set_arena_offset(0);
  Status valid = validateExecutable(exe);
  EXPECT_TRUE(valid.ok()) << valid.message();
  // A transpose may not: it reads elements after it wrote others.
  exe = makeExecutable();
  addLibrary(exe, "transpose", 2);
  addStep(exe.mutable_entry_points(1), 4, {kEncodeHidden, kEncodeHidden});
  for (int64_t x : loom::abi::TransposeCall{{0, 1, 2}}.encode().ints)
    exe.mutable_entry_points(1)->mutable_steps(2)->add_int_attrs(x);
  EXPECT_REFUSED(exe, "step 2 of 'encode': kernel 'transpose.2' (#4) writes "
                      "argument 1, buffer 'encode/%0' (#12), over the memory "
                      "of argument 0");
}

TEST_F(ExecutableFile, RefusesASizeNoInputBinds) {
  Executable exe = makeExecutable();
  exe.add_symbols("other");
  setPoly(exe.mutable_buffers(kEncodeHidden), 1, {{1, 2}});
  setPoly(exe.mutable_buffers(kMemory), 1, {{1, 2}});
  EXPECT_REFUSED(exe, "entry point 'encode' (#1): buffer "
                      "'encode/output/memory' (#7) has a dim of size "
                      "'other', which no input of entry point 'encode' (#1) "
                      "names");
}

TEST_F(ExecutableFile, RefusesGradientBuffers) {
  Executable exe = makeExecutable();
  exe.mutable_buffers(kRows)->clear_view_of();
  exe.mutable_buffers(kRows)->clear_view_offset();
  exe.mutable_buffers(kRows)->set_role(Buffer::GRADIENT);
  EXPECT_REFUSED(exe, "buffer 'train_step/%rows' (#13) is a gradient buffer");
}

TEST_F(ExecutableFile, RefusesGeneratedKernelsWithoutTheirSignature) {
  Executable exe = makeExecutable();
  exe.mutable_kernels(kActivate)->clear_args();
  EXPECT_REFUSED(exe, "kernel 'loom_region_0' (#1) takes 2 arguments but "
                      "records the signature of 0");
  exe = makeExecutable();
  exe.mutable_kernels(kActivate)
      ->mutable_accesses(0)
      ->mutable_dims(0)
      ->set_arg_dim(5);
  EXPECT_REFUSED(exe, "kernel 'loom_region_0' (#1): access 0 has a dim that "
                      "is neither a size nor one of its argument's dims");
  exe = makeExecutable();
  exe.mutable_kernels(kActivate)->mutable_accesses()->RemoveLast();
  EXPECT_REFUSED(exe, "writes argument 1 through no recorded access");
}

TEST(ProgramSizes, RefusesNegativeOrOverflowingDimsPerCall) {
  // Validation proves dims >= 0 for sizes >= 1; a call may bind a size of
  // 0 (an empty cache), where len - 1 would be -1.
  Executable exe = makeExecutable();
  addBuffer(exe, "encode/output/shifted", Buffer::OUTPUT, Buffer::F32,
            {"batch", "len"});
  setPoly(exe.mutable_buffers(kNumBuffers), 1, {{1, 1}, {-1}});
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(exe);
  ASSERT_TRUE(bool(program)) << program.error();
  ErrorOr<std::vector<int64_t>> shape =
      (*program)->shapeOf(kNumBuffers, {2, 0});
  ASSERT_FALSE(bool(shape));
  EXPECT_NE(shape.error().find("has dim 1 of -1 for these inputs"),
            std::string::npos)
      << shape.error();
  shape = (*program)->shapeOf(kNumBuffers, {2, 3});
  ASSERT_TRUE(bool(shape)) << shape.error();
  EXPECT_EQ(*shape, (std::vector<int64_t>{2, 2}));
  // Sizes whose product overflows int64 are refused, not wrapped.
  shape =
      (*program)->shapeOf(kNumBuffers, {int64_t(1) << 40, int64_t(1) << 40});
  ASSERT_FALSE(bool(shape));
  EXPECT_NE(shape.error().find("more than 2^63"), std::string::npos)
      << shape.error();
}

TEST(ProgramSizes, ChecksEachLaunchOfAGeneratedKernel) {
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(makeExecutable());
  ASSERT_TRUE(bool(program)) << program.error();
  std::vector<float> a(2 * 3 * 8), b(2 * 3 * 8);
  runtime::TensorRef in{a.data(), DType::F32, {2, 3, 8}};
  runtime::TensorRef out{b.data(), DType::F32, {2, 3, 8}};
  EXPECT_TRUE((*program)->checkLaunch(kActivate, {in, out}).ok());
  // A size of 1 broadcasts; any other must agree.
  out.shape = {1, 3, 8};
  EXPECT_TRUE((*program)->checkLaunch(kActivate, {in, out}).ok());
  out.shape = {3, 2, 8};
  Status status = (*program)->checkLaunch(kActivate, {in, out});
  EXPECT_NE(status.message().find("lines up sizes 2 and 3 along dim 0"),
            std::string::npos)
      << status.message();
}

} // namespace
