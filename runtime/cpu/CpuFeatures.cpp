//===- CpuFeatures.cpp - Whether this CPU runs the code -------------------===//
//
// The detection reads the same CPUID bits under the same operating-system
// conditions as LLVM's sys::getHostCPUFeatures, from which the compiler's
// "native" target takes its features: an executable compiled on a machine
// must be accepted by that machine, so the two may not disagree on a
// feature either records.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuFeatures.h"

#include "abi/CpuFeatures.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace loom::cpu {
namespace {

/// What allocateHostMemory (runtime/Tensor.h) and every Device allocation
/// (runtime/Device.h) align to; arenas start there, so a buffer at an
/// offset that is a multiple of the executable's alignment is aligned when
/// that alignment divides this.
constexpr int64_t kMemoryAlignment = 64;

#if defined(__x86_64__) || defined(__i386__)

struct Registers {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

/// CPUID leaf `leaf`, subleaf `subleaf`; all zero when the CPU has no such
/// leaf, so that every bit of it reads as absent.
Registers cpuid(unsigned leaf, unsigned subleaf = 0) {
  Registers r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx))
    return Registers();
  return r;
}

/// XCR0: which register states the operating system saves on a context
/// switch. Only to be read when CPUID says OSXSAVE.
uint64_t readXcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

bool bit(unsigned reg, int index) { return (reg >> index) & 1; }

std::set<std::string> detectFeatures() {
  std::set<std::string> has;
  auto set = [&](const char *feature, bool present) {
    if (present)
      has.insert(feature);
  };
  unsigned maxLeaf = __get_cpuid_max(0, nullptr);
  if (maxLeaf < 1)
    return has;

  Registers l1 = cpuid(1);
  bool osxsave = bit(l1.ecx, 27);
  uint64_t xcr0 = osxsave ? readXcr0() : 0;
  // VEX-encoded instructions use the YMM state (XCR0 bits 1 and 2), EVEX
  // ones also the opmask and ZMM states (bits 5 to 7). Without the
  // operating system saving them they fault even where CPUID lists them.
  bool ymm = osxsave && bit(l1.ecx, 28) && (xcr0 & 0x6) == 0x6;
  bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;

  set("sse3", bit(l1.ecx, 0));
  set("ssse3", bit(l1.ecx, 9));
  set("fma", bit(l1.ecx, 12) && ymm);
  set("cx16", bit(l1.ecx, 13));
  set("sse4.1", bit(l1.ecx, 19));
  set("sse4.2", bit(l1.ecx, 20));
  set("crc32", bit(l1.ecx, 20)); // part of SSE4.2
  set("movbe", bit(l1.ecx, 22));
  set("popcnt", bit(l1.ecx, 23));
  set("xsave", bit(l1.ecx, 26) && ymm);
  set("avx", ymm);
  set("f16c", bit(l1.ecx, 29) && ymm);

  unsigned maxExtLeaf = __get_cpuid_max(0x80000000, nullptr);
  if (maxExtLeaf >= 0x80000001) {
    Registers e1 = cpuid(0x80000001);
    set("sahf", bit(e1.ecx, 0));
    set("lzcnt", bit(e1.ecx, 5));
    set("sse4a", bit(e1.ecx, 6));
    set("xop", bit(e1.ecx, 11) && ymm);
    set("fma4", bit(e1.ecx, 16) && ymm);
    set("tbm", bit(e1.ecx, 21));
  }

  if (maxLeaf >= 7) {
    Registers l7 = cpuid(7, 0);
    set("bmi", bit(l7.ebx, 3));
    set("avx2", bit(l7.ebx, 5) && ymm);
    set("bmi2", bit(l7.ebx, 8));
    set("avx512f", bit(l7.ebx, 16) && zmm);
    set("avx512dq", bit(l7.ebx, 17) && zmm);
    set("avx512ifma", bit(l7.ebx, 21) && zmm);
    set("avx512cd", bit(l7.ebx, 28) && zmm);
    set("avx512bw", bit(l7.ebx, 30) && zmm);
    set("avx512vl", bit(l7.ebx, 31) && zmm);
    set("avx512vbmi", bit(l7.ecx, 1) && zmm);
    set("avx512vbmi2", bit(l7.ecx, 6) && zmm);
    set("gfni", bit(l7.ecx, 8));
    set("avx512vnni", bit(l7.ecx, 11) && zmm);
    set("avx512bitalg", bit(l7.ecx, 12) && zmm);
    set("avx512vpopcntdq", bit(l7.ecx, 14) && zmm);
    set("avx512fp16", bit(l7.edx, 23) && zmm);
    // Subleaf 0's EAX is the highest subleaf; some CPUs return garbage
    // rather than zeros beyond it.
    if (l7.eax >= 1) {
      Registers l7s1 = cpuid(7, 1);
      set("avxvnni", bit(l7s1.eax, 4) && ymm);
      set("avx512bf16", bit(l7s1.eax, 5) && zmm);
    }
  }
  return has;
}

#else

std::set<std::string> detectFeatures() { return {}; }

#endif

std::string join(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

} // namespace

bool bf16EmulationAllowed() {
  const char *value = std::getenv(kEmulateBf16Env);
  return value && std::string(value) == "1";
}

std::vector<std::string> hostCpuFeatures() {
  // CPUID does not change while the process runs; the mask is read anew so
  // that a test may set it after the first detection.
  static const std::set<std::string> detected = detectFeatures();
  std::vector<std::string> maskList = abi::maskedCpuFeatures();
  std::set<std::string> masked(maskList.begin(), maskList.end());
  std::vector<std::string> features;
  for (const std::string &feature : abi::knownCpuFeatures())
    if (detected.count(feature) && !masked.count(feature))
      features.push_back(feature);
  return features;
}

std::string hostCpuArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "i386";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

Status checkCpuTarget(const runtime::CpuTarget &target) {
  auto refuse = [](const std::string &why) {
    return Status::failure(why, ErrorCode::Unsupported);
  };
  const std::string &triple = target.triple();
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch == "amd64")
    arch = "x86_64";
  if (arch != hostCpuArchitecture())
    return refuse("the executable was compiled for '" + triple +
                  "', this machine is " + hostCpuArchitecture() +
                  "; compile it on this machine");

  std::vector<std::string> host = hostCpuFeatures();
  std::vector<std::string> missing;
  for (const std::string &feature : target.features())
    if (!std::binary_search(host.begin(), host.end(), feature))
      missing.push_back(feature);
  if (!missing.empty()) {
    std::string compiledFor =
        target.level() == abi::kNativeCpuLevel
            ? "on a '" + target.cpu() + "' (--cpu native)"
            : "for " + target.level() + " (CPU '" + target.cpu() + "')";
    std::string level = abi::highestCpuLevel(host);
    std::string remedy =
        level.empty()
            ? "recompile it on this machine (--cpu native); this CPU is "
              "below x86-64-v2, the lowest portable level"
            : "recompile it with `loom compile --cpu " + level +
                  "` (the highest level this CPU runs) or on this machine";
    return refuse("this CPU lacks " + join(missing) +
                  ", which the executable's code may use: it was compiled " +
                  compiledFor + "; " + remedy);
  }

  if (target.alignment() <= 0 || kMemoryAlignment % target.alignment() != 0)
    return refuse("the executable's kernels assume buffers aligned to " +
                  std::to_string(target.alignment()) +
                  " bytes, but this runtime aligns memory to " +
                  std::to_string(kMemoryAlignment));
  return Status::success();
}

} // namespace loom::cpu
