//===- CpuFeatures.cpp - The x86-64 features an executable records --------===//
//
// The levels follow the x86-64 psABI (x86-64-ABI, "Micro-architecture
// levels") in LLVM's names: CMPXCHG16B is cx16, LAHF-SAHF sahf, OSXSAVE
// xsave, BMI1 bmi; LLVM also names SSE4.2's crc32 instruction on its own.
// Each level's set is exactly the recorded features LLVM enables for its CPU
// of the same name, so an executable compiled for a level records that
// level's set and nothing else.
//
//===----------------------------------------------------------------------===//

#include "abi/CpuFeatures.h"

#include <algorithm>
#include <cstdlib>

namespace loom::abi {
namespace {

struct Level {
  std::string_view name;
  unsigned vectorBits;
  /// What it adds to the level below.
  std::vector<std::string_view> adds;
};

const std::vector<Level> &levels() {
  static const std::vector<Level> table = {
      {"x86-64-v2",
       128,
       {"crc32", "cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2",
        "ssse3"}},
      {"x86-64-v3",
       256,
       {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe",
        "xsave"}},
      {"x86-64-v4",
       512,
       {"avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"}},
  };
  return table;
}

/// Known features beyond x86-64-v4 that a "native" target may have: the
/// AVX-512 extensions the vector code generator uses (byte permutes,
/// funnel shifts, popcounts, dot products, bf16 and f16 conversions and
/// arithmetic), their VEX forms, GFNI (bit reversal, byte shifts), and AMD's
/// SSE4A, FMA4, XOP and TBM, which it uses for shuffles, fused multiply-adds,
/// rotates and bit manipulation on the CPUs that have them.
constexpr std::string_view kExtensions[] = {
    "avx512bf16", "avx512bitalg", "avx512fp16", "avx512ifma",
    "avx512vbmi", "avx512vbmi2",  "avx512vnni", "avx512vpopcntdq",
    "avxvnni",    "fma4",         "gfni",       "sse4a",
    "tbm",        "xop",
};

const Level *findLevel(std::string_view name) {
  for (const Level &level : levels())
    if (level.name == name)
      return &level;
  return nullptr;
}

} // namespace

const std::vector<std::string> &knownCpuFeatures() {
  static const std::vector<std::string> features = [] {
    std::vector<std::string> all;
    for (const Level &level : levels())
      all.insert(all.end(), level.adds.begin(), level.adds.end());
    all.insert(all.end(), std::begin(kExtensions), std::end(kExtensions));
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
  }();
  return features;
}

bool isKnownCpuFeature(std::string_view feature) {
  const std::vector<std::string> &all = knownCpuFeatures();
  return std::binary_search(all.begin(), all.end(), feature);
}

const std::vector<std::string> &portableCpuLevels() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Level &level : levels())
      out.emplace_back(level.name);
    return out;
  }();
  return names;
}

bool isCpuLevel(std::string_view level) {
  return level == kNativeCpuLevel || findLevel(level) != nullptr;
}

std::string cpuLevelList() {
  std::string list(kNativeCpuLevel);
  for (const std::string &level : portableCpuLevels())
    list += ", " + level;
  return list;
}

std::vector<std::string> cpuLevelFeatures(std::string_view name) {
  const Level *wanted = findLevel(name);
  std::vector<std::string> features;
  if (!wanted)
    return features;
  for (const Level &level : levels()) {
    features.insert(features.end(), level.adds.begin(), level.adds.end());
    if (&level == wanted)
      break;
  }
  std::sort(features.begin(), features.end());
  return features;
}

unsigned cpuLevelVectorBits(std::string_view name) {
  const Level *level = findLevel(name);
  return level ? level->vectorBits : 0;
}

std::string highestCpuLevel(const std::vector<std::string> &features) {
  std::string best;
  for (const Level &level : levels()) {
    for (std::string_view feature : level.adds)
      if (std::find(features.begin(), features.end(), feature) ==
          features.end())
        return best;
    best = std::string(level.name);
  }
  return best;
}

std::vector<std::string> maskedCpuFeatures() {
  std::vector<std::string> masked;
  const char *value = std::getenv(kMaskCpuFeaturesEnv);
  if (!value)
    return masked;
  std::string name;
  for (const char *c = value;; ++c) {
    if (*c == ',' || *c == ' ' || *c == '\0') {
      if (!name.empty())
        masked.push_back(name);
      name.clear();
      if (*c == '\0')
        break;
    } else {
      name += *c;
    }
  }
  return masked;
}

} // namespace loom::abi
