//===- CpuFeaturesTest.cpp - CPU targets, their checks and validation -----===//

#include "abi/CpuFeatures.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuFeatures.h"

#include "DeviceTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

// Inside namespace loom, so that `abi` means loom::abi and not the C++
// runtime's `abi` that gtest brings in.
namespace loom {
namespace {

bool contains(const std::vector<std::string> &set, const std::string &x) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

/// LOOM_CPU_MASK_FEATURES set while alive, as it was before afterwards.
struct MaskFeatures : test::ScopedEnv {
  explicit MaskFeatures(const char *features)
      : ScopedEnv(cpu::kMaskCpuFeaturesEnv, features) {}
};

/// Code compiled on this machine for itself (--cpu native).
runtime::CpuTarget nativeTarget() {
  runtime::CpuTarget target;
  target.set_triple(cpu::hostCpuArchitecture() + "-unknown-linux-gnu");
  target.set_cpu("testcpu");
  target.set_level(abi::kNativeCpuLevel);
  for (const std::string &feature : cpu::hostCpuFeatures())
    target.add_features(feature);
  target.set_vector_bits(128);
  target.set_alignment(64);
  return target;
}

TEST(CpuFeatures, KnownFeaturesAreSortedAndUnique) {
  const std::vector<std::string> &known = abi::knownCpuFeatures();
  ASSERT_FALSE(known.empty());
  EXPECT_TRUE(std::is_sorted(known.begin(), known.end()));
  EXPECT_EQ(std::adjacent_find(known.begin(), known.end()), known.end());
  for (const char *feature : {"sse4.2", "avx", "avx2", "fma", "f16c", "bmi2",
                              "avx512f", "avx512bw", "avx512vl"})
    EXPECT_TRUE(abi::isKnownCpuFeature(feature)) << feature;
  EXPECT_FALSE(abi::isKnownCpuFeature("avx9000"));
  EXPECT_FALSE(abi::isKnownCpuFeature(""));
}

TEST(CpuFeatures, LevelsAreNested) {
  ASSERT_EQ(abi::portableCpuLevels(),
            (std::vector<std::string>{"x86-64-v2", "x86-64-v3", "x86-64-v4"}));
  std::vector<std::string> below;
  unsigned bitsBelow = 0;
  for (const std::string &level : abi::portableCpuLevels()) {
    std::vector<std::string> features = abi::cpuLevelFeatures(level);
    EXPECT_TRUE(std::is_sorted(features.begin(), features.end())) << level;
    for (const std::string &feature : features)
      EXPECT_TRUE(abi::isKnownCpuFeature(feature)) << level << " " << feature;
    // Each level strictly contains the one below it.
    EXPECT_TRUE(std::includes(features.begin(), features.end(), below.begin(),
                              below.end()))
        << level;
    EXPECT_GT(features.size(), below.size()) << level;
    EXPECT_GT(abi::cpuLevelVectorBits(level), bitsBelow) << level;
    EXPECT_EQ(abi::highestCpuLevel(features), level);
    below = features;
    bitsBelow = abi::cpuLevelVectorBits(level);
  }
  std::vector<std::string> v2 = abi::cpuLevelFeatures("x86-64-v2");
  EXPECT_TRUE(contains(v2, "sse4.2"));
  EXPECT_FALSE(contains(v2, "avx"));
  std::vector<std::string> v3 = abi::cpuLevelFeatures("x86-64-v3");
  EXPECT_TRUE(contains(v3, "avx2"));
  EXPECT_TRUE(contains(v3, "fma"));
  EXPECT_FALSE(contains(v3, "avx512f"));
  EXPECT_TRUE(contains(abi::cpuLevelFeatures("x86-64-v4"), "avx512bw"));
  EXPECT_EQ(abi::cpuLevelVectorBits("x86-64-v2"), 128u);
  EXPECT_EQ(abi::cpuLevelVectorBits("x86-64-v3"), 256u);
  EXPECT_EQ(abi::cpuLevelVectorBits("x86-64-v4"), 512u);
  EXPECT_EQ(abi::highestCpuLevel({}), "");
}

TEST(CpuFeatures, NativeIsALevelWithoutAFixedSet) {
  EXPECT_TRUE(abi::isCpuLevel("native"));
  EXPECT_TRUE(abi::isCpuLevel("x86-64-v3"));
  EXPECT_FALSE(abi::isCpuLevel("x86-64"));
  EXPECT_FALSE(abi::isCpuLevel("bogus"));
  EXPECT_TRUE(abi::cpuLevelFeatures("native").empty());
  EXPECT_TRUE(abi::cpuLevelFeatures("bogus").empty());
  EXPECT_EQ(abi::cpuLevelList(), "native, x86-64-v2, x86-64-v3, x86-64-v4");
}

TEST(CpuFeatures, HostFeaturesAreKnownAndSorted) {
  std::vector<std::string> host = cpu::hostCpuFeatures();
  EXPECT_TRUE(std::is_sorted(host.begin(), host.end()));
  for (const std::string &feature : host)
    EXPECT_TRUE(abi::isKnownCpuFeature(feature)) << feature;
  // What AVX-512 needs of the operating system, AVX needs too.
  if (contains(host, "avx512f")) {
    EXPECT_TRUE(contains(host, "avx"));
  }
}

TEST(CpuFeatures, AcceptsTheHostsOwnFeatures) {
  Status status = cpu::checkCpuTarget(nativeTarget());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(CpuFeatures, MaskHidesFeaturesFromDetection) {
  if (!contains(cpu::hostCpuFeatures(), "avx2"))
    GTEST_SKIP() << "this CPU has no avx2 to hide";
  MaskFeatures mask("avx2, fma");
  std::vector<std::string> host = cpu::hostCpuFeatures();
  EXPECT_FALSE(contains(host, "avx2"));
  EXPECT_FALSE(contains(host, "fma"));
  EXPECT_TRUE(contains(host, "avx"));
}

TEST(CpuFeatures, RefusesAFeatureTheHostLacks) {
  runtime::CpuTarget target = nativeTarget();
  if (!contains(cpu::hostCpuFeatures(), "avx2"))
    GTEST_SKIP() << "this CPU has no avx2 to hide";
  target.set_cpu("znver9");
  MaskFeatures mask("avx2");
  Status status = cpu::checkCpuTarget(target);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find("lacks avx2"), std::string::npos)
      << status.message();
  // Names what the code was compiled for and what to do instead.
  EXPECT_NE(status.message().find("znver9"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("--cpu native"), std::string::npos)
      << status.message();
  if (contains(cpu::hostCpuFeatures(), "sse4.2")) {
    EXPECT_NE(status.message().find("--cpu x86-64-v2"), std::string::npos)
        << status.message();
  }
}

TEST(CpuFeatures, RefusesAPortableLevelAboveTheHost) {
  runtime::CpuTarget target = nativeTarget();
  if (!contains(cpu::hostCpuFeatures(), "avx2"))
    GTEST_SKIP() << "this CPU has no avx2 to hide";
  target.set_cpu("x86-64-v3");
  target.set_level("x86-64-v3");
  target.clear_features();
  for (const std::string &feature : abi::cpuLevelFeatures("x86-64-v3"))
    target.add_features(feature);
  EXPECT_TRUE(cpu::checkCpuTarget(target).ok());
  MaskFeatures mask("avx2,fma");
  Status status = cpu::checkCpuTarget(target);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("avx2, fma"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("x86-64-v3"), std::string::npos)
      << status.message();
}

TEST(CpuFeatures, RefusesAnotherArchitecture) {
  runtime::CpuTarget target = nativeTarget();
  std::string other =
      cpu::hostCpuArchitecture() == "aarch64" ? "x86_64" : "aarch64";
  target.set_triple(other + "-unknown-linux-gnu");
  target.clear_features();
  Status status = cpu::checkCpuTarget(target);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find(other), std::string::npos)
      << status.message();
}

TEST(CpuFeatures, RefusesAnAlignmentLargerThanTheRuntimes) {
  runtime::CpuTarget target = nativeTarget();
  target.set_alignment(4096);
  Status status = cpu::checkCpuTarget(target);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), ErrorCode::Unsupported);
  EXPECT_NE(status.message().find("4096"), std::string::npos)
      << status.message();
  target.set_alignment(16);
  EXPECT_TRUE(cpu::checkCpuTarget(target).ok());
}

/// The smallest executable validation accepts: a CPU target and no code.
Executable minimalExecutable() {
  Executable exe;
  exe.set_format_version(kFormatVersion);
  exe.set_target(Executable::CPU);
  exe.set_code_checksum(fnv1a64(exe.code()));
  runtime::CpuTarget *target = exe.mutable_cpu_target();
  target->set_triple("x86_64-unknown-linux-gnu");
  target->set_cpu("x86-64-v3");
  target->set_level("x86-64-v3");
  for (const std::string &feature : abi::cpuLevelFeatures("x86-64-v3"))
    target->add_features(feature);
  target->set_vector_bits(256);
  target->set_alignment(64);
  return exe;
}

/// Why validation refuses `exe`, or "" when it passes; a refusal must be
/// Corrupt.
std::string validationError(const Executable &exe) {
  Status status = validateExecutable(exe);
  if (!status.ok())
    EXPECT_EQ(status.code(), ErrorCode::Corrupt) << status.message();
  return status.message();
}

TEST(CpuFeatures, ValidationChecksTheCpuTarget) {
  EXPECT_EQ(validationError(minimalExecutable()), "");

  Executable exe = minimalExecutable();
  exe.clear_cpu_target();
  EXPECT_NE(validationError(exe).find("without a cpu_target"),
            std::string::npos);

  exe = minimalExecutable();
  exe.mutable_cpu_target()->clear_triple();
  EXPECT_NE(validationError(exe).find("no triple"), std::string::npos);

  exe = minimalExecutable();
  exe.mutable_cpu_target()->clear_cpu();
  EXPECT_NE(validationError(exe).find("no cpu"), std::string::npos);

  // A feature no loader could check: refused before any machine is asked.
  exe = minimalExecutable();
  exe.mutable_cpu_target()->add_features("zz-madeup");
  EXPECT_NE(validationError(exe).find("'zz-madeup'"), std::string::npos)
      << validationError(exe);

  exe = minimalExecutable();
  exe.mutable_cpu_target()->add_features("avx");
  EXPECT_NE(validationError(exe).find("not sorted"), std::string::npos)
      << validationError(exe);

  for (int alignment : {0, -64, 48}) {
    exe = minimalExecutable();
    exe.mutable_cpu_target()->set_alignment(alignment);
    EXPECT_NE(validationError(exe).find("not a positive power of two"),
              std::string::npos)
        << alignment;
  }
}

TEST(CpuFeatures, ValidationChecksTemporariesAreAligned) {
  Executable exe = minimalExecutable();
  runtime::Buffer *buffer = exe.add_buffers();
  buffer->set_name("f/%0");
  buffer->set_role(runtime::Buffer::TEMPORARY);
  buffer->set_dtype(runtime::Buffer::F32);
  buffer->add_shape()->set_size(4);
  buffer->set_arena_offset(128);
  buffer->set_max_bytes(16);
  EXPECT_EQ(validationError(exe), "");
  buffer->set_arena_offset(96);
  EXPECT_NE(validationError(exe).find("not a multiple of the cpu_target "
                                      "alignment 64"),
            std::string::npos)
      << validationError(exe);
}

} // namespace
} // namespace loom
