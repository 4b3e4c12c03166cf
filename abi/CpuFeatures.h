//===- CpuFeatures.h - The x86-64 features executables record ---*- C++ -*-===//
//
// A CPU executable's machine code may use any instruction-set extension of
// the CPU it was compiled for; run on a CPU without one, it dies of SIGILL
// somewhere in the middle of a step. So the compiler records the extensions
// the code may use (Executable.cpu_target) and the runtime refuses, at load,
// an executable that needs one the machine lacks. This header is the
// vocabulary both sides share: the features, spelled as LLVM spells them
// (the compiler asks LLVM which are enabled; the runtime detects each with
// CPUID), and the portable levels of the x86-64 psABI, which a user picks
// with `loom compile --cpu` to get code that runs on every CPU of a level.
//
// The list is the levels' features and, beyond them, the extensions whose
// instructions LLVM's code generator may pick for ordinary IR (vector
// arithmetic, shuffles, conversions, bit manipulation); not every CPUID bit:
// an extension reached only through intrinsics Loom never writes (aes, sha,
// rdrand, amx) is not recorded, so that it cannot refuse code which never
// uses it. The x86-64 baseline (sse2, cmov, cx8, ...) is implied by the
// triple and not recorded either.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_ABI_CPUFEATURES_H
#define LOOM_ABI_CPUFEATURES_H

#include <string>
#include <string_view>
#include <vector>

namespace loom::abi {

/// The level that means "this machine": LLVM's host CPU with all of its
/// features. Its code runs on CPUs at least as capable as the compiling one.
constexpr const char *kNativeCpuLevel = "native";

/// Every feature Loom records and checks, sorted.
const std::vector<std::string> &knownCpuFeatures();
bool isKnownCpuFeature(std::string_view feature);

/// The portable levels, lowest first: "x86-64-v2", "x86-64-v3",
/// "x86-64-v4". Each name is also LLVM's CPU name for it.
const std::vector<std::string> &portableCpuLevels();
/// Whether `level` is "native" or a portable level.
bool isCpuLevel(std::string_view level);
/// "native, x86-64-v2, x86-64-v3, x86-64-v4", for messages.
std::string cpuLevelList();

/// The known features every CPU of portable level `level` has, sorted (each
/// level's set contains the one below it); empty for "native" and for an
/// unknown level.
std::vector<std::string> cpuLevelFeatures(std::string_view level);
/// The widest vector registers of portable level `level`: 128 (SSE), 256
/// (AVX2) or 512 (AVX-512); 0 for "native" or an unknown level.
unsigned cpuLevelVectorBits(std::string_view level);

/// The highest portable level whose features are all in `features`, or an
/// empty string when not even x86-64-v2's are.
std::string highestCpuLevel(const std::vector<std::string> &features);

/// Testing aid: LOOM_CPU_MASK_FEATURES="avx2,fma" makes this process act as
/// if the CPU lacked the listed features (comma- or space-separated), both
/// where the runtime checks an executable against this machine and where
/// the compiler's "native" target takes this machine's features, so that a
/// test sees on a machine that has them what a machine without them does.
constexpr const char *kMaskCpuFeaturesEnv = "LOOM_CPU_MASK_FEATURES";
/// The features LOOM_CPU_MASK_FEATURES names now (read on every call).
std::vector<std::string> maskedCpuFeatures();

} // namespace loom::abi

#endif // LOOM_ABI_CPUFEATURES_H
