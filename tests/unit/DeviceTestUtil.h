//===- DeviceTestUtil.h - Helpers for tests of devices ----------*- C++ -*-===//
//
// What the tests of devices share, with nothing of the compiler: a test
// built on these alone (the device conformance suite) links only the
// runtime, so it runs on a GPU machine that has no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TESTS_UNIT_DEVICETESTUTIL_H
#define LOOM_TESTS_UNIT_DEVICETESTUTIL_H

#include "runtime/Device.h"
#include "runtime/Session.h"
#include "runtime/Tensor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loom::test {

/// Environment variable `name` set to `value` while alive, as it was before
/// afterwards (the runtime's testing aids, LOOM_CPU_MASK_FEATURES and
/// LOOM_CPU_EMULATE_BF16, are read on every call).
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (previous)
      ::setenv(name.c_str(), previous->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  std::string name;
  std::optional<std::string> previous;
};

/// A zeroed host tensor; an allocation failure ends the test program.
runtime::Tensor hostTensor(DType dtype, std::vector<int64_t> shape);

/// A [rows, longest] i32 host tensor of `rows`, padded with 0.
runtime::Tensor idsOf(const std::vector<std::vector<int32_t>> &rows);

/// A session of `exe` on a CPU device with `threads` threads; fails the
/// current test (and returns null) when the runtime refuses it.
std::unique_ptr<runtime::Session> cpuSession(runtime::Executable exe,
                                             int threads);

/// Copies every state tensor (parameters and optimizer moments) of `from`
/// into `to`, a session of the same model.
::testing::AssertionResult copyState(const runtime::Session &from,
                                     runtime::Session &to);

/// The device kinds this runtime was built with, and "cuda" in any case: a
/// build or machine without it shows the CUDA cases of the conformance
/// suite as skipped rather than not at all.
std::vector<std::string> deviceKindsUnderTest();
/// Whether LOOM_REQUIRE_DEVICE names `kind` ("cuda" for "cuda:1"): on a GPU
/// machine a device that does not open must fail the suite, not skip it,
/// so that a run with no GPU coverage never reads as a pass.
bool deviceRequired(const std::string &kind);
/// A device of `kind` with `threads` threads, or null when this build or
/// machine has none (`absent` then says why, for GTEST_SKIP) and the device
/// is not required; any other failure to open it fails the current test.
std::shared_ptr<runtime::Device>
openTestDevice(const std::string &kind, int threads, std::string &absent);
/// "cpu, 3 threads" ("cuda" when `threads` is 0), for traces.
std::string deviceLabel(const runtime::Device &device, int threads);

/// `call` with each tensor replaced by a zeroed tensor of its dtype and
/// shape on `device`, kept alive in `owned`; fails the current test (and
/// returns the failure) when one cannot be allocated.
ErrorOr<runtime::LibraryCallArgs>
zeroedOnDevice(runtime::Device &device, const runtime::LibraryCallArgs &call,
               std::vector<runtime::Tensor> &owned);

/// Makes a well-formed CPU executable a well-formed CUDA one in form only:
/// launch records for its generated kernels, a cuda_target, and stand-in
/// bytes for the cubin and PTX. For tests of what is done with an
/// executable of another target; no GPU can run it.
void retargetToCuda(runtime::Executable &exe);

/// Element `i` of host memory holding `dtype` values, as a double (F16:
/// NaN, which no test writes).
double elementAsDouble(const void *data, DType dtype, int64_t i);

/// n floats drawn uniformly from [-1, 1) with `seed`.
std::vector<float> uniformFloats(size_t n, unsigned seed);
/// The largest |y - x . w^T| (x [m, k], w [n, k], y [m, n], row-major),
/// the product in double; infinite where y holds a NaN.
double worstProductError(const std::vector<float> &x,
                         const std::vector<float> &w,
                         const std::vector<float> &y, int64_t m, int64_t n,
                         int64_t k);

/// A device kind as a test-name suffix ("cpu").
std::string deviceKindName(const testing::TestParamInfo<std::string> &info);

} // namespace loom::test

#endif // LOOM_TESTS_UNIT_DEVICETESTUTIL_H
