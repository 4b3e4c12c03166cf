//===- CpuFeatures.h - Whether this CPU runs the code -----------*- C++ -*-===//
//
// A CPU executable records the target its code was compiled for
// (Executable.cpu_target): the triple, the instruction-set extensions the
// code may use (abi/CpuFeatures.h) and the alignment its kernels assume.
// Before the code is opened, the CPU device checks them against this
// machine: code for an extension the CPU lacks would otherwise die of
// SIGILL in the middle of a step, far from the cause. The features are
// detected with CPUID, and a vector extension counts only when XGETBV says
// the operating system saves its registers (YMM for AVX, ZMM and the mask
// registers for AVX-512), as a kernel or hypervisor may turn it off.
//
// Testing aid: LOOM_CPU_MASK_FEATURES="avx2,fma" makes this process act as
// if the CPU lacked the listed features, so a test can see the refusal on a
// machine that has them. It is read on every call and never needed in use;
// the compiler's "native" target leaves them out too (codegen/cpu).
// LOOM_CPU_EMULATE_BF16=1 lets the CPU device run a bf16 executable on a CPU
// without AVX512-BF16 (its products widened to f32: the same values, slower
// than fp32), so that such a machine can test what bf16 code computes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_CPUFEATURES_H
#define LOOM_RUNTIME_CPU_CPUFEATURES_H

#include "abi/CpuFeatures.h"
#include "abi/Error.h"
#include "runtime/executable.pb.h"

#include <string>
#include <vector>

namespace loom::cpu {

/// The environment variable of the testing aid above (abi/CpuFeatures.h,
/// where the compiler's native target reads it too).
using abi::kMaskCpuFeaturesEnv;

/// The environment variable that lets bf16 executables run without
/// AVX512-BF16 (a testing aid, above).
constexpr const char *kEmulateBf16Env = "LOOM_CPU_EMULATE_BF16";

/// Whether LOOM_CPU_EMULATE_BF16 is "1" (read on every call).
bool bf16EmulationAllowed();

/// The features of abi/CpuFeatures.h this CPU has and the operating system
/// supports, sorted, less those LOOM_CPU_MASK_FEATURES names.
std::vector<std::string> hostCpuFeatures();

/// This process's architecture as a target triple spells it ("x86_64").
std::string hostCpuArchitecture();

/// Success when code compiled for `target` runs on this machine: the same
/// architecture, every recorded feature present, and an alignment that the
/// runtime's 64-byte aligned memory satisfies. Otherwise Unsupported, with a
/// message naming what is missing and how to compile code that runs here.
Status checkCpuTarget(const runtime::CpuTarget &target);

} // namespace loom::cpu

#endif // LOOM_RUNTIME_CPU_CPUFEATURES_H
