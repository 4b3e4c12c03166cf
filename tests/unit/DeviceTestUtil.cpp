//===- DeviceTestUtil.cpp - Helpers for tests of devices ------------------===//

#include "DeviceTestUtil.h"

#include "runtime/Executable.h"
#include "runtime/Program.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace loom::test {

runtime::Tensor hostTensor(DType dtype, std::vector<int64_t> shape) {
  ErrorOr<runtime::Tensor> t = runtime::Tensor::host(dtype, std::move(shape));
  if (!t) {
    std::fprintf(stderr, "test: %s\n", t.error().c_str());
    std::abort();
  }
  return std::move(*t);
}

runtime::Tensor idsOf(const std::vector<std::vector<int32_t>> &rows) {
  size_t width = 0;
  for (const auto &r : rows)
    width = std::max(width, r.size());
  runtime::Tensor t =
      hostTensor(DType::I32, {int64_t(rows.size()), int64_t(width)});
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy(rows[i].begin(), rows[i].end(),
              static_cast<int32_t *>(t.data()) + i * width);
  return t;
}

std::unique_ptr<runtime::Session> cpuSession(runtime::Executable exe,
                                             int threads) {
  auto program = runtime::Program::create(std::move(exe));
  if (!program) {
    ADD_FAILURE() << program.error();
    return nullptr;
  }
  auto device = runtime::openDevice("cpu", threads);
  if (!device) {
    ADD_FAILURE() << device.error();
    return nullptr;
  }
  auto session = runtime::Session::create(*program, *device);
  if (!session) {
    ADD_FAILURE() << session.error();
    return nullptr;
  }
  return std::move(*session);
}

::testing::AssertionResult copyState(const runtime::Session &from,
                                     runtime::Session &to) {
  for (const std::string &name : from.stateNames()) {
    ErrorOr<runtime::Tensor> value = from.getState(name);
    if (!value)
      return ::testing::AssertionFailure() << name << ": " << value.error();
    if (Status set = to.setState(name, value->ref()); !set.ok())
      return ::testing::AssertionFailure() << name << ": " << set.message();
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::string> deviceKindsUnderTest() {
  std::vector<std::string> kinds = runtime::deviceKinds();
  if (std::find(kinds.begin(), kinds.end(), "cuda") == kinds.end())
    kinds.push_back("cuda");
  return kinds;
}

std::string deviceKindName(const testing::TestParamInfo<std::string> &info) {
  std::string name = info.param;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

bool deviceRequired(const std::string &kind) {
  const char *required = std::getenv("LOOM_REQUIRE_DEVICE");
  if (!required)
    return false;
  std::string base = kind.substr(0, kind.find(':'));
  return base == required;
}

std::shared_ptr<runtime::Device>
openTestDevice(const std::string &kind, int threads, std::string &absent) {
  ErrorOr<std::shared_ptr<runtime::Device>> device =
      runtime::openDevice(kind, threads);
  if (device)
    return std::move(*device);
  bool absentHere = device.code() == ErrorCode::Unsupported ||
                    device.code() == ErrorCode::NotFound;
  if (absentHere && !deviceRequired(kind))
    absent = "no " + kind + " device here: " + device.error();
  else if (absentHere)
    ADD_FAILURE() << "LOOM_REQUIRE_DEVICE=" << kind
                  << " but no such device opens: " << device.error();
  else
    ADD_FAILURE() << "opening a " << kind << " device: " << device.error();
  return nullptr;
}

std::string deviceLabel(const runtime::Device &device, int threads) {
  std::string label = device.name();
  if (threads > 0)
    label +=
        ", " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
  return label;
}

ErrorOr<runtime::LibraryCallArgs>
zeroedOnDevice(runtime::Device &device, const runtime::LibraryCallArgs &call,
               std::vector<runtime::Tensor> &owned) {
  runtime::LibraryCallArgs placed;
  placed.attrs = call.attrs;
  for (const runtime::TensorRef &t : call.tensors) {
    ErrorOr<runtime::Tensor> onDevice =
        runtime::Tensor::onDevice(device, t.dtype, t.shape);
    if (!onDevice) {
      ADD_FAILURE() << onDevice.error();
      return onDevice.status();
    }
    placed.tensors.push_back(onDevice->ref());
    owned.push_back(std::move(*onDevice));
  }
  return placed;
}

void retargetToCuda(runtime::Executable &exe) {
  exe.set_target(runtime::Executable::CUDA);
  exe.clear_cpu_target();
  runtime::CudaTarget &target = *exe.mutable_cuda_target();
  target.set_arch("sm_90");
  target.set_ptx(".version 8.0\n.target sm_90\n.address_size 64\n");
  target.set_alignment(64);
  for (runtime::Kernel &kernel : *exe.mutable_kernels())
    if (kernel.kind() == runtime::Kernel::GENERATED) {
      kernel.mutable_cuda_launch()->set_shape(runtime::CudaLaunch::ELEMENTS);
      kernel.mutable_cuda_launch()->set_block_threads(256);
    }
  exe.set_code(std::string("\x7f"
                           "ELF stand-in cubin"));
  exe.set_code_checksum(fnv1a64(exe.code()));
}

double elementAsDouble(const void *bytes, DType dtype, int64_t i) {
  const char *data = static_cast<const char *>(bytes);
  switch (dtype) {
  case DType::F32: {
    float x;
    std::memcpy(&x, data + 4 * i, 4);
    return x;
  }
  case DType::F64: {
    double x;
    std::memcpy(&x, data + 8 * i, 8);
    return x;
  }
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, data + 2 * i, 2);
    uint32_t bits = uint32_t(h) << 16;
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  }
  case DType::I32: {
    int32_t x;
    std::memcpy(&x, data + 4 * i, 4);
    return x;
  }
  case DType::I64: {
    int64_t x;
    std::memcpy(&x, data + 8 * i, 8);
    return double(x);
  }
  case DType::I1:
    return data[i];
  case DType::F16:
    break;
  }
  return NAN;
}

std::vector<float> uniformFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

double worstProductError(const std::vector<float> &x,
                         const std::vector<float> &w,
                         const std::vector<float> &y, int64_t m, int64_t n,
                         int64_t k) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(x[i * k + p]) * double(w[j * k + p]);
      double error = std::fabs(s - y[i * n + j]);
      worst = std::isnan(error) ? INFINITY : std::max(worst, error);
    }
  return worst;
}

} // namespace loom::test
