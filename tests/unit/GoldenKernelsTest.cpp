//===- GoldenKernelsTest.cpp - The kernel suites' cases on every device ---===//
//
// Replays every case the kernel suites wrote (GoldenCase.h) on each device
// kind: the arguments copied to the device as the kernel first got them,
// results inside operands where the case says, the kernel called by name,
// each result compared with the interpreter's within the case's tolerance
// (relative to the result's largest magnitude, or to the case's floor;
// NaN only where NaN is expected, so a result a kernel forgets to write
// shows). A layout that only some devices' kernels read (attention's keys
// held position first, which the CPU's decoder caches use and the compiler
// transposes for CUDA) may be refused by another device, as Unsupported and
// by name; any other refusal fails. It links the
// runtime alone and so runs on a GPU machine: the interpreter's verdict on
// every library kernel case travels there as files. A folder with no case
// is a failure, not a pass.
//
//   LOOM_GOLDEN_DIR   the cases (default: the build's tests/unit/golden)
//
//===----------------------------------------------------------------------===//

#include "DeviceTestUtil.h"
#include "GoldenCase.h"

#include "abi/LibraryCalls.h"
#include "runtime/Safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

using namespace loom;

namespace {

std::string goldenDir() {
  if (const char *dir = std::getenv("LOOM_GOLDEN_DIR"); dir && *dir)
    return dir;
  return LOOM_GOLDEN_DIR_DEFAULT;
}

/// Whether `c` lays its arguments out in a way the compiler uses only for
/// some devices, whose kernels alone must take it.
bool layoutOfSomeDevices(const test::GoldenCase &c) {
  if (c.kernel != "attention")
    return false;
  ErrorOr<loom::abi::AttentionCall> call =
      loom::abi::AttentionCall::decode(c.attrs);
  return call && call->keysPositionMajor;
}

/// Runs case `c` on `device`; "" when every result is within tolerance
/// (or, setting `refused`, when the device refused a layout it need not
/// take), else what parted first.
std::string replay(runtime::Device &device, const test::GoldenCase &c,
                   bool *refused = nullptr) {
  std::vector<runtime::Tensor> owned(c.args.size());
  runtime::LibraryCallArgs call;
  call.attrs = c.attrs;
  std::vector<bool> aliased(c.args.size());
  for (const test::GoldenCase::Alias &a : c.aliases)
    aliased[a.result] = true;
  for (size_t i = 0; i < c.args.size(); ++i) {
    runtime::TensorRef ref = c.args[i].ref();
    if (!aliased[i]) {
      ErrorOr<runtime::Tensor> placed = runtime::toDevice(device, ref);
      if (!placed)
        return "copy to the device: " + placed.error();
      owned[i] = std::move(*placed);
      ref.data = owned[i].data();
    }
    call.tensors.push_back(ref);
  }
  for (const test::GoldenCase::Alias &a : c.aliases)
    call.tensors[a.result].data =
        static_cast<char *>(call.tensors[a.operand].data) + a.byteOffset;
  Status status = device.callLibrary(c.kernel, call);
  Status synced = device.synchronize();
  if (!status.ok() && status.code() == ErrorCode::Unsupported &&
      layoutOfSomeDevices(c) && refused) {
    *refused = true;
    return "";
  }
  if (!status.ok())
    return "the kernel refused it: " + status.message();
  if (!synced.ok())
    return "synchronizing after it: " + synced.message();
  for (size_t r = 0; r < c.results.size(); ++r) {
    const runtime::TensorRef &ref = call.tensors[c.results[r]];
    ErrorOr<runtime::Tensor> host = runtime::Tensor::host(ref.dtype, ref.shape);
    if (!host)
      return host.error();
    if (ref.bytes())
      if (Status copied = device.copy(host->data(), ref.data, ref.bytes(),
                                      runtime::CopyDirection::DeviceToHost);
          !copied.ok())
        return "copy from the device: " + copied.message();
    const std::vector<double> &want = c.want[r];
    if (int64_t(want.size()) != host->numel())
      return "result " + std::to_string(r) + " has " +
             std::to_string(host->numel()) + " elements, the case " +
             std::to_string(want.size());
    double scale = 0;
    for (double w : want)
      if (std::isfinite(w))
        scale = std::max(scale, std::fabs(w));
    double worst = 0;
    int64_t worstAt = -1;
    for (int64_t i = 0; i < host->numel(); ++i) {
      double g = test::elementAsDouble(host->data(), host->dtype(), i),
             w = want[i];
      if (std::isnan(w) || std::isnan(g)) {
        if (std::isnan(w) != std::isnan(g)) {
          std::ostringstream why;
          why << "result " << r << ", element " << i << ": " << g
              << ", expected " << w;
          return why.str();
        }
        continue;
      }
      double d = g == w ? 0.0 : std::fabs(g - w);
      if (d > worst) {
        worst = d;
        worstAt = i;
      }
    }
    if (worst > c.rel * std::max(c.floor, scale)) {
      std::ostringstream why;
      why << "result " << r << " " << runtime::shapeString(ref.shape)
          << ", worst element " << worstAt << ": "
          << test::elementAsDouble(host->data(), host->dtype(), worstAt)
          << ", expected " << want[worstAt] << " (off by " << worst << ", "
          << worst / (scale + 1e-300) << " of the largest magnitude " << scale
          << "; tolerance " << c.rel << " of it, at least " << c.rel * c.floor
          << ")";
      return why.str();
    }
  }
  return "";
}

class GoldenKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenKernels, EveryCaseMatchesTheInterpreter) {
  std::string absent;
  std::shared_ptr<runtime::Device> device =
      test::openTestDevice(GetParam(), 0, absent);
  if (!device && !absent.empty())
    GTEST_SKIP() << absent;
  ASSERT_TRUE(device);
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(goldenDir(), ec))
    if (entry.path().extension() == ".safetensors")
      paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  ASSERT_FALSE(paths.empty())
      << "no golden case in '" << goldenDir()
      << "': run the kernel suites with LOOM_GOLDEN_DIR set";
  std::map<std::string, int> perKernel;
  int failures = 0, refusals = 0;
  for (const std::string &path : paths) {
    ErrorOr<test::GoldenCase> c = test::readGoldenCase(path);
    ASSERT_TRUE(bool(c)) << c.error();
    bool refused = false;
    std::string why = replay(*device, *c, &refused);
    refusals += refused;
    ++perKernel[c->kernel];
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << c->kernel << ", case " << c->name << ": " << why;
    }
  }
  std::string kernels;
  for (const auto &[kernel, count] : perKernel)
    kernels += " " + kernel + " " + std::to_string(count);
  std::printf("  %zu cases of %zu kernels on %s, %d failed, %d refused as a "
              "layout this device's kernels do not take:%s\n",
              paths.size(), perKernel.size(), device->description().c_str(),
              failures, refusals, kernels.c_str());
  // The CPU wrote every case: it refuses none.
  if (GetParam() == "cpu")
    EXPECT_EQ(refusals, 0);
}

// The replay's verdict can fail: a case whose expected value is moved by
// ten times its result's scale is named, and a damaged case file is not
// taken for one.
TEST(GoldenKernelsReplay, NamesACaseThatDiffersAndRefusesADamagedOne) {
  std::string absent;
  std::shared_ptr<runtime::Device> cpu = test::openTestDevice("cpu", 1, absent);
  ASSERT_TRUE(cpu) << absent;
  std::string found;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(goldenDir(), ec))
    if (entry.path().filename().string().rfind(
            "DeviceKernels_GatherKernel.EmbeddingRows_cpu.0", 0) == 0)
      found = entry.path().string();
  ASSERT_FALSE(found.empty()) << "no gather case in '" << goldenDir() << "'";
  ErrorOr<test::GoldenCase> c = test::readGoldenCase(found);
  ASSERT_TRUE(bool(c)) << c.error();
  EXPECT_EQ(replay(*cpu, *c), "");
  double scale = 0;
  for (double w : c->want[0])
    scale = std::max(scale, std::fabs(w));
  c->want[0][1] += 10 * scale + 1;
  std::string why = replay(*cpu, *c);
  EXPECT_NE(why.find("result 0"), std::string::npos) << why;
  EXPECT_NE(why.find("worst element 1:"), std::string::npos) << why;

  std::string damaged = ::testing::TempDir() + "/damaged.safetensors";
  std::filesystem::copy_file(
      found, damaged, std::filesystem::copy_options::overwrite_existing, ec);
  ASSERT_FALSE(ec) << ec.message();
  ErrorOr<SafeTensorFile> file = loadSafetensors(damaged);
  ASSERT_TRUE(bool(file)) << file.error();
  file->metadata.erase("kernel");
  ASSERT_TRUE(saveSafetensors(damaged, *file).ok());
  ErrorOr<test::GoldenCase> refused = test::readGoldenCase(damaged);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(refused.error().find("no metadata 'kernel'"), std::string::npos)
      << refused.error();
}

INSTANTIATE_TEST_SUITE_P(Devices, GoldenKernels,
                         ::testing::ValuesIn(test::deviceKindsUnderTest()),
                         test::deviceKindName);

} // namespace
