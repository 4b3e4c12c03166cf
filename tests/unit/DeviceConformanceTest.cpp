//===- DeviceConformanceTest.cpp - What every Device must do --------------===//
//
// The device-level half of the conformance suite (the library kernels are
// LibraryKernelsTest and AttentionKernelsTest): every test runs once per
// device kind, as DeviceConformance/<Suite>.<Test>/<kind>, and a kind this
// build or machine lacks ("cuda" on a CPU-only build) shows as skipped.
//
//   Memory        allocate is zeroed and 64-byte aligned (0 bytes too), the
//                 three copy directions round-trip, a tensor too large for
//                 any memory is an OutOfMemory error instead of a crash
//   Primitives    gatherRows, argmax and topK, and what they refuse
//   LibraryCalls  kernels by name: an unknown name is NotFound, damaged
//                 attributes are Corrupt, every kernel of the calling
//                 convention is there
//   Sessions      a small hand-written executable (a library matmul, a
//                 constant, a parameter, a temporary in the arena) run
//                 through Program and Session, and the executables a device
//                 must refuse
//
//===----------------------------------------------------------------------===//

#include "abi/CpuFeatures.h"
#include "abi/DType.h"
#include "abi/Error.h"
#include "abi/LibraryCalls.h"
#include "runtime/Device.h"
#include "runtime/Executable.h"
#include "runtime/Program.h"
#include "runtime/Session.h"
#include "runtime/Tensor.h"
#include "runtime/cpu/CpuFeatures.h"

#include "DeviceTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace loom;
using runtime::CopyDirection;
using runtime::Device;
using runtime::Tensor;
using runtime::TensorRef;

namespace {

//===----------------------------------------------------------------------===//
// The devices under test
//===----------------------------------------------------------------------===//

/// Opens a device of the kind under test (the CPU with 3 threads), or skips
/// the test when this build or machine has none.
class DeviceTest : public testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    const std::string &kind = GetParam();
    std::string absent;
    device = test::openTestDevice(kind, kind == "cpu" ? 3 : 0, absent);
    if (!device && !absent.empty())
      GTEST_SKIP() << absent;
    // openTestDevice has said why; the test body must not run.
    ASSERT_TRUE(device);
  }

  /// A device tensor holding `values`.
  template <typename T>
  Tensor upload(DType dtype, std::vector<int64_t> shape,
                const std::vector<T> &values) {
    EXPECT_EQ(static_cast<int64_t>(values.size() * sizeof(T)),
              runtime::numelOf(shape) * dtypeSize(dtype));
    TensorRef host{const_cast<T *>(values.data()), dtype, std::move(shape)};
    ErrorOr<Tensor> placed = runtime::toDevice(*device, host);
    EXPECT_TRUE(bool(placed)) << placed.error();
    return placed ? std::move(*placed) : Tensor();
  }

  /// The elements of device tensor `t`.
  template <typename T> std::vector<T> download(const Tensor &t) {
    ErrorOr<Tensor> host = runtime::toHost(t);
    EXPECT_TRUE(bool(host)) << host.error();
    if (!host)
      return {};
    EXPECT_EQ(host->device(), nullptr);
    EXPECT_EQ(host->bytes() % static_cast<int64_t>(sizeof(T)), 0);
    const T *data = static_cast<const T *>(host->data());
    return std::vector<T>(data, data + host->bytes() / sizeof(T));
  }

  /// `bytes` bytes of device memory at `memory`, on the host.
  std::vector<unsigned char> readBytes(const void *memory, size_t bytes) {
    std::vector<unsigned char> out(bytes, 0xab);
    if (bytes) {
      Status status =
          device->copy(out.data(), memory, bytes, CopyDirection::DeviceToHost);
      EXPECT_TRUE(status.ok()) << status.message();
    }
    return out;
  }

  std::shared_ptr<Device> device;
};

/// A suite of DeviceTest cases, instantiated per device kind.
#define DEVICE_SUITE(Suite)                                                    \
  class Suite : public DeviceTest {};                                          \
  INSTANTIATE_TEST_SUITE_P(DeviceConformance, Suite,                           \
                           testing::ValuesIn(test::deviceKindsUnderTest()),    \
                           test::deviceKindName)

bool isAligned(const void *p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

bool allZero(const std::vector<unsigned char> &bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](unsigned char b) { return b == 0; });
}

//===----------------------------------------------------------------------===//
// Identity
//===----------------------------------------------------------------------===//

DEVICE_SUITE(Devices);

TEST_P(Devices, NameTheirKindAndTarget) {
  EXPECT_EQ(device->name().rfind(GetParam(), 0), 0u)
      << device->name() << " is not a " << GetParam() << " device";
  EXPECT_FALSE(device->description().empty());
  EXPECT_NE(device->target(), runtime::Executable::TARGET_UNSPECIFIED);
  EXPECT_TRUE(runtime::Executable::Target_IsValid(device->target()));
  if (GetParam() == "cpu") {
    EXPECT_EQ(device->target(), runtime::Executable::CPU);
    EXPECT_TRUE(device->sharesHostMemory());
  }
  Status synced = device->synchronize();
  EXPECT_TRUE(synced.ok()) << synced.message();
}

TEST(DeviceKinds, CpuIsAlwaysThereAndOthersAreNamed) {
  std::vector<std::string> kinds = runtime::deviceKinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "cpu"), kinds.end());
  ErrorOr<std::shared_ptr<Device>> unknown = runtime::openDevice("tpu", 1);
  ASSERT_FALSE(bool(unknown));
  EXPECT_EQ(unknown.code(), ErrorCode::NotFound) << unknown.error();
  EXPECT_NE(unknown.error().find("tpu"), std::string::npos) << unknown.error();
  // A kind the runtime knows but was built or run without is Unsupported,
  // never a crash; one it has opens.
  ErrorOr<std::shared_ptr<Device>> cuda = runtime::openDevice("cuda", 1);
  if (!cuda)
    EXPECT_EQ(cuda.code(), ErrorCode::Unsupported) << cuda.error();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

DEVICE_SUITE(Memory);

TEST_P(Memory, AllocateReturnsZeroedAlignedMemory) {
  // Small blocks, blocks either side of 1 MiB (where the CPU maps pages),
  // and a size that is no multiple of anything.
  for (size_t bytes :
       {size_t(0), size_t(1), size_t(3), size_t(64), size_t(100), size_t(4096),
        size_t(1 << 20) - 1, size_t(1 << 20), size_t(3 << 20) + 5}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    // Twice: memory a previous block dirtied comes back zeroed.
    for (int round = 0; round < 2; ++round) {
      ErrorOr<void *> memory = device->allocate(bytes);
      ASSERT_TRUE(bool(memory)) << memory.error();
      ASSERT_NE(*memory, nullptr);
      EXPECT_TRUE(isAligned(*memory, 64)) << *memory;
      std::vector<unsigned char> contents = readBytes(*memory, bytes);
      EXPECT_TRUE(allZero(contents)) << "round " << round;
      if (bytes) {
        std::vector<unsigned char> dirt(bytes, 0xcd);
        Status status = device->copy(*memory, dirt.data(), bytes,
                                     CopyDirection::HostToDevice);
        EXPECT_TRUE(status.ok()) << status.message();
      }
      device->deallocate(*memory, bytes);
    }
  }
}

TEST_P(Memory, BlocksAreDistinct) {
  std::vector<std::pair<void *, size_t>> blocks;
  for (size_t bytes : {1, 64, 65, 1000, 4096}) {
    ErrorOr<void *> memory = device->allocate(bytes);
    ASSERT_TRUE(bool(memory)) << memory.error();
    blocks.push_back({*memory, bytes});
  }
  // Each block holds its own byte pattern, undisturbed by the others.
  for (size_t i = 0; i < blocks.size(); ++i) {
    size_t bytes = blocks[i].second;
    std::vector<unsigned char> pattern(bytes,
                                       static_cast<unsigned char>(i + 1));
    Status status = device->copy(blocks[i].first, pattern.data(), bytes,
                                 CopyDirection::HostToDevice);
    EXPECT_TRUE(status.ok()) << status.message();
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    size_t bytes = blocks[i].second;
    std::vector<unsigned char> contents = readBytes(blocks[i].first, bytes);
    EXPECT_EQ(contents, std::vector<unsigned char>(
                            bytes, static_cast<unsigned char>(i + 1)))
        << "block " << i;
  }
  for (auto [memory, bytes] : blocks)
    device->deallocate(memory, bytes);
}

TEST_P(Memory, CopiesRoundTripInEveryDirection) {
  for (size_t bytes : {size_t(1), size_t(7), size_t(4096), size_t(1000003)}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    std::mt19937 rng(static_cast<unsigned>(bytes));
    std::vector<unsigned char> data(bytes);
    for (unsigned char &b : data)
      b = static_cast<unsigned char>(rng());
    ErrorOr<void *> a = device->allocate(bytes);
    ErrorOr<void *> b = device->allocate(bytes);
    ASSERT_TRUE(a && b);
    Status status =
        device->copy(*a, data.data(), bytes, CopyDirection::HostToDevice);
    EXPECT_TRUE(status.ok()) << status.message();
    status = device->copy(*b, *a, bytes, CopyDirection::DeviceToDevice);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(readBytes(*b, bytes), data);
    device->deallocate(*a, bytes);
    device->deallocate(*b, bytes);
  }
}

TEST_P(Memory, CopiesIntoTheMiddleOfABlock) {
  ErrorOr<void *> memory = device->allocate(64);
  ASSERT_TRUE(bool(memory)) << memory.error();
  char *base = static_cast<char *>(*memory);
  std::vector<unsigned char> part(13, 0x5a);
  Status status =
      device->copy(base + 7, part.data(), 13, CopyDirection::HostToDevice);
  EXPECT_TRUE(status.ok()) << status.message();
  // Device to device within the block, overlapping nothing.
  status = device->copy(base + 40, base + 7, 13, CopyDirection::DeviceToDevice);
  EXPECT_TRUE(status.ok()) << status.message();
  std::vector<unsigned char> contents = readBytes(base, 64);
  for (size_t i = 0; i < 64; ++i) {
    bool written = (i >= 7 && i < 20) || (i >= 40 && i < 53);
    EXPECT_EQ(contents[i], written ? 0x5a : 0) << "byte " << i;
  }
  // Copying nothing is allowed and changes nothing.
  status = device->copy(base, part.data(), 0, CopyDirection::HostToDevice);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(readBytes(base, 64), contents);
  device->deallocate(*memory, 64);
}

TEST_P(Memory, TensorsLiveOnTheDevice) {
  ErrorOr<Tensor> zeroed = Tensor::onDevice(*device, DType::F32, {3, 5});
  ASSERT_TRUE(bool(zeroed)) << zeroed.error();
  EXPECT_EQ(zeroed->device(), device.get());
  EXPECT_EQ(zeroed->bytes(), 60);
  EXPECT_TRUE(isAligned(zeroed->data(), 64));
  EXPECT_EQ(download<float>(*zeroed), std::vector<float>(15, 0.0f));

  std::vector<int64_t> i64 = {1, -2, int64_t(1) << 40, 7, 0, -9};
  Tensor t = upload(DType::I64, {2, 3}, i64);
  EXPECT_EQ(t.device(), device.get());
  EXPECT_EQ(t.dtype(), DType::I64);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(download<int64_t>(t), i64);

  std::vector<uint8_t> i1 = {1, 0, 0, 1, 1};
  EXPECT_EQ(download<uint8_t>(upload(DType::I1, {5}, i1)), i1);

  // A scalar, and tensors without elements.
  EXPECT_EQ(download<float>(upload(DType::F32, {}, std::vector<float>{2.5f})),
            std::vector<float>{2.5f});
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{0}, std::vector<int64_t>{0, 4},
        std::vector<int64_t>{3, 0, 2}}) {
    ErrorOr<Tensor> empty = Tensor::onDevice(*device, DType::F32, shape);
    ASSERT_TRUE(bool(empty)) << empty.error();
    EXPECT_EQ(empty->bytes(), 0);
    ErrorOr<Tensor> host = runtime::toHost(*empty);
    ASSERT_TRUE(bool(host)) << host.error();
    EXPECT_EQ(host->shape(), shape);
    ErrorOr<Tensor> back = runtime::toDevice(*device, host->ref());
    ASSERT_TRUE(bool(back)) << back.error();
    EXPECT_EQ(back->shape(), shape);
  }
}

TEST_P(Memory, AHugeTensorIsOutOfMemoryNotACrash) {
  // 4 PiB: more than any device (or address space) holds.
  ErrorOr<Tensor> huge =
      Tensor::onDevice(*device, DType::F32, {int64_t(1) << 50});
  ASSERT_FALSE(bool(huge));
  EXPECT_EQ(huge.code(), ErrorCode::OutOfMemory) << huge.error();
  // A size that overflows 64 bits.
  huge = Tensor::onDevice(*device, DType::F32,
                          {int64_t(1) << 40, int64_t(1) << 40});
  ASSERT_FALSE(bool(huge));
  EXPECT_EQ(huge.code(), ErrorCode::OutOfMemory) << huge.error();
  // Straight from the device.
  ErrorOr<void *> memory = device->allocate(size_t(1) << 62);
  ASSERT_FALSE(bool(memory));
  EXPECT_EQ(memory.code(), ErrorCode::OutOfMemory) << memory.error();
  memory = device->allocate(std::numeric_limits<size_t>::max());
  ASSERT_FALSE(bool(memory));
  EXPECT_EQ(memory.code(), ErrorCode::OutOfMemory) << memory.error();
  // A negative dim is the caller's mistake.
  ErrorOr<Tensor> negative = Tensor::onDevice(*device, DType::F32, {-1, 3});
  ASSERT_FALSE(bool(negative));
  EXPECT_EQ(negative.code(), ErrorCode::InvalidArgument) << negative.error();
  // And the device still works.
  EXPECT_EQ(download<float>(upload(DType::F32, {2}, std::vector<float>{1, 2})),
            (std::vector<float>{1, 2}));
}

//===----------------------------------------------------------------------===//
// Primitives
//===----------------------------------------------------------------------===//

DEVICE_SUITE(Primitives);

TEST_P(Primitives, GatherRowsReordersRepeatsAndDropsRows) {
  std::vector<float> rows5(15);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 3; ++c)
      rows5[r * 3 + c] = static_cast<float>(r * 10 + c);
  Tensor src = upload(DType::F32, {5, 3}, rows5);
  ErrorOr<Tensor> dst = Tensor::onDevice(*device, DType::F32, {4, 3});
  ASSERT_TRUE(bool(dst)) << dst.error();
  Status status = device->gatherRows(src.ref(), {4, 0, 0, 2}, dst->ref());
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(download<float>(*dst),
            (std::vector<float>{40, 41, 42, 0, 1, 2, 0, 1, 2, 20, 21, 22}));

  // Rank 3 and another element type: a beam's cache [beams, T, D].
  std::vector<int64_t> cache(4 * 2 * 3);
  std::iota(cache.begin(), cache.end(), int64_t(100));
  Tensor cacheSrc = upload(DType::I64, {4, 2, 3}, cache);
  ErrorOr<Tensor> picked = Tensor::onDevice(*device, DType::I64, {2, 2, 3});
  ASSERT_TRUE(bool(picked)) << picked.error();
  status = device->gatherRows(cacheSrc.ref(), {3, 1}, picked->ref());
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<int64_t> expected(cache.begin() + 18, cache.end());
  expected.insert(expected.end(), cache.begin() + 6, cache.begin() + 12);
  EXPECT_EQ(download<int64_t>(*picked), expected);

  // No rows at all.
  ErrorOr<Tensor> none = Tensor::onDevice(*device, DType::F32, {0, 3});
  ASSERT_TRUE(bool(none)) << none.error();
  status = device->gatherRows(src.ref(), {}, none->ref());
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST_P(Primitives, GatherRowsRefusesRowsOutOfRangeAndMismatchedShapes) {
  Tensor src = upload(DType::F32, {5, 3}, std::vector<float>(15, 1.0f));
  ErrorOr<Tensor> dst = Tensor::onDevice(*device, DType::F32, {2, 3});
  ASSERT_TRUE(bool(dst)) << dst.error();
  for (const std::vector<int64_t> &rows :
       {std::vector<int64_t>{0, 5}, std::vector<int64_t>{-1, 0},
        std::vector<int64_t>{int64_t(1) << 40, 0}}) {
    Status status = device->gatherRows(src.ref(), rows, dst->ref());
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument)
        << rows[0] << ", " << rows[1] << ": " << status.message();
  }
  struct Bad {
    DType dtype;
    std::vector<int64_t> shape;
  };
  const Bad bad[] = {
      {DType::F32, {3, 3}},    // three rows for two
      {DType::F32, {2, 2}},    // rows of another size
      {DType::F32, {2, 3, 1}}, // another rank
      {DType::I32, {2, 3}},    // another element type
  };
  for (const Bad &b : bad) {
    ErrorOr<Tensor> wrong = Tensor::onDevice(*device, b.dtype, b.shape);
    ASSERT_TRUE(bool(wrong)) << wrong.error();
    Status status = device->gatherRows(src.ref(), {0, 1}, wrong->ref());
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument)
        << dtypeName(b.dtype) << " " << runtime::shapeString(b.shape) << ": "
        << status.message();
  }
}

// A beam's caches follow their hypotheses in place: rows that keep theirs
// stay, the others become copies of rows that stay. Both the device's own
// moveRows and the default every device inherits (a gather of the whole
// tensor, copied back) must do it.
TEST_P(Primitives, MoveRowsCopiesRowsInPlace) {
  for (bool inherited : {false, true}) {
    std::vector<float> rows6(18);
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 3; ++c)
        rows6[r * 3 + c] = static_cast<float>(r * 10 + c);
    Tensor t = upload(DType::F32, {6, 3}, rows6);
    std::vector<int64_t> from = {0, 0, 2}, to = {1, 4, 5};
    Status status = inherited ? device->Device::moveRows(t.ref(), from, to)
                              : device->moveRows(t.ref(), from, to);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(download<float>(t),
              (std::vector<float>{0, 1, 2, 0, 1, 2, 20, 21, 22, 30, 31, 32, 0,
                                  1, 2, 20, 21, 22}))
        << (inherited ? "Device::moveRows" : "the device's moveRows");
    status = inherited ? device->Device::moveRows(t.ref(), {}, {})
                       : device->moveRows(t.ref(), {}, {});
    EXPECT_TRUE(status.ok()) << status.message();
  }
}

TEST_P(Primitives, MoveRowsRefusesMovesThatDependOnTheirOrder) {
  std::vector<float> values(12);
  std::iota(values.begin(), values.end(), 0.0f);
  Tensor t = upload(DType::F32, {4, 3}, values);
  struct Bad {
    std::vector<int64_t> from, to;
    const char *why;
  };
  const Bad bad[] = {
      {{0, 1}, {2, 2}, "written twice"},
      {{0, 1}, {1, 2}, "both read and written"},
      {{0}, {4}, "row 4 of 4"},
      {{-1}, {0}, "row -1 of 4"},
      {{0, 1}, {2}, "2 sources for 1 rows"},
  };
  for (const Bad &b : bad) {
    Status status = device->moveRows(t.ref(), b.from, b.to);
    EXPECT_EQ(status.code(), ErrorCode::InvalidArgument) << b.why;
    EXPECT_NE(status.message().find(b.why), std::string::npos)
        << status.message();
  }
  // Nothing moved.
  EXPECT_EQ(download<float>(t), values);
}

// A diverged model's NaN scores rank below every number, in both
// primitives, so decoding never picks a NaN while a number is there.
TEST_P(Primitives, NaNScoresRankBelowEveryNumber) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> scores = {
      nan, 1,    nan, 3,   2,   // numbers among NaNs
      nan, nan,  nan, nan, nan, // nothing but NaN: the first
      nan, -inf, nan, -1,  nan, // -inf still above NaN
  };
  Tensor t = upload(DType::F32, {3, 5}, scores);
  ErrorOr<std::vector<int32_t>> best = device->argmax(t.ref());
  ASSERT_TRUE(bool(best)) << best.error();
  EXPECT_EQ(*best, (std::vector<int32_t>{3, 0, 3}));
  ErrorOr<Device::TopK> top = device->topK(t.ref(), 3);
  ASSERT_TRUE(bool(top)) << top.error();
  EXPECT_EQ(top->indices, (std::vector<int32_t>{3, 4, 1, 0, 1, 2, 3, 1, 0}));
}

TEST_P(Primitives, ArgmaxTakesTheLowestIndexAmongEquals) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> scores = {
      1,    5,    5,    2,    5,    // ties: the first
      3,    3,    3,    3,    3,    // all equal
      -7,   -2,   -9,   -2,   -3,   // negative
      0,    0,    0,    0,    1,    // the last
      -inf, -inf, -inf, -inf, -inf, // nothing but -inf
  };
  Tensor t = upload(DType::F32, {5, 5}, scores);
  ErrorOr<std::vector<int32_t>> best = device->argmax(t.ref());
  ASSERT_TRUE(bool(best)) << best.error();
  EXPECT_EQ(*best, (std::vector<int32_t>{1, 0, 1, 4, 0}));

  // Rows long enough that a device reduces them in parts.
  const int64_t rows = 3, n = 5000;
  std::vector<float> wide(rows * n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float &v : wide)
    v = dist(rng);
  wide[0 * n + 4321] = 2;
  wide[0 * n + 4999] = 2;
  wide[1 * n + 0] = 3;
  wide[1 * n + 1] = 3;
  wide[2 * n + 2500] = 1.5f;
  wide[2 * n + 1250] = 1.5f;
  wide[2 * n + 3750] = 1.5f;
  best = device->argmax(upload(DType::F32, {rows, n}, wide).ref());
  ASSERT_TRUE(bool(best)) << best.error();
  EXPECT_EQ(*best, (std::vector<int32_t>{4321, 0, 1250}));
}

TEST_P(Primitives, ArgmaxRefusesAnythingButF32Rows) {
  ErrorOr<Tensor> ints = Tensor::onDevice(*device, DType::I32, {2, 3});
  ErrorOr<Tensor> doubles = Tensor::onDevice(*device, DType::F64, {2, 3});
  ErrorOr<Tensor> vector = Tensor::onDevice(*device, DType::F32, {6});
  ErrorOr<Tensor> cube = Tensor::onDevice(*device, DType::F32, {1, 2, 3});
  ErrorOr<Tensor> empty = Tensor::onDevice(*device, DType::F32, {2, 0});
  ASSERT_TRUE(ints && doubles && vector && cube && empty);
  for (const Tensor *t : {&*ints, &*doubles, &*vector, &*cube, &*empty}) {
    ErrorOr<std::vector<int32_t>> best = device->argmax(t->ref());
    ASSERT_FALSE(bool(best))
        << dtypeName(t->dtype()) << " " << runtime::shapeString(t->shape());
    EXPECT_EQ(best.code(), ErrorCode::InvalidArgument) << best.error();
  }
}

/// The k best of each row as a stable sort orders them: larger first, the
/// lower index first among equals.
std::vector<int32_t> referenceTopK(const std::vector<float> &scores,
                                   int64_t rows, int64_t n, int64_t k) {
  std::vector<int32_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const float *row = scores.data() + r * n;
    std::stable_sort(order.begin(), order.end(),
                     [row](int32_t a, int32_t b) { return row[a] > row[b]; });
    out.insert(out.end(), order.begin(), order.begin() + k);
  }
  return out;
}

TEST_P(Primitives, TopKIsBestFirstWithTiesByLowerIndex) {
  std::vector<float> scores = {
      0.5f, 2, -1, 2, 0.5f, 3, // ties at 2 and at 0.5
      1,    1, 1,  1, 1,    1, // all equal
  };
  Tensor t = upload(DType::F32, {2, 6}, scores);
  ErrorOr<Device::TopK> top = device->topK(t.ref(), 3);
  ASSERT_TRUE(bool(top)) << top.error();
  EXPECT_EQ(top->indices, (std::vector<int32_t>{5, 1, 3, 0, 1, 2}));
  EXPECT_EQ(top->values, (std::vector<float>{3, 2, 2, 1, 1, 1}));

  // Every k up to the whole row; the values are the scores at the indices.
  for (int64_t k = 1; k <= 6; ++k) {
    SCOPED_TRACE("k " + std::to_string(k));
    top = device->topK(t.ref(), k);
    ASSERT_TRUE(bool(top)) << top.error();
    EXPECT_EQ(top->indices, referenceTopK(scores, 2, 6, k));
    ASSERT_EQ(top->values.size(), size_t(2 * k));
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < k; ++j)
        EXPECT_EQ(top->values[r * k + j],
                  scores[r * 6 + top->indices[r * k + j]]);
  }
  top = device->topK(t.ref(), 6);
  ASSERT_TRUE(bool(top)) << top.error();
  EXPECT_EQ(top->indices,
            (std::vector<int32_t>{5, 1, 3, 0, 4, 2, 0, 1, 2, 3, 4, 5}));
}

TEST_P(Primitives, TopKOfWideRowsMatchesASort) {
  // A vocabulary-sized row with many ties (values on a coarse grid).
  const int64_t rows = 4, n = 3000, k = 8;
  std::vector<float> scores(rows * n);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> grid(-50, 50);
  for (float &v : scores)
    v = grid(rng) / 4.0f;
  Tensor t = upload(DType::F32, {rows, n}, scores);
  ErrorOr<Device::TopK> top = device->topK(t.ref(), k);
  ASSERT_TRUE(bool(top)) << top.error();
  std::vector<int32_t> expected = referenceTopK(scores, rows, n, k);
  EXPECT_EQ(top->indices, expected);
  for (int64_t i = 0; i < rows * k; ++i)
    EXPECT_EQ(top->values[i], scores[(i / k) * n + expected[i]]) << i;
}

TEST_P(Primitives, TopKRefusesKOutOfRangeAndOtherScores) {
  Tensor t = upload(DType::F32, {2, 6}, std::vector<float>(12, 1.0f));
  for (int64_t k : {int64_t(0), int64_t(-1), int64_t(7), int64_t(1) << 40}) {
    ErrorOr<Device::TopK> top = device->topK(t.ref(), k);
    ASSERT_FALSE(bool(top)) << "k " << k;
    EXPECT_EQ(top.code(), ErrorCode::InvalidArgument) << top.error();
  }
  ErrorOr<Tensor> ints = Tensor::onDevice(*device, DType::I32, {2, 6});
  ErrorOr<Tensor> vector = Tensor::onDevice(*device, DType::F32, {6});
  ASSERT_TRUE(ints && vector);
  for (const Tensor *bad : {&*ints, &*vector}) {
    ErrorOr<Device::TopK> top = device->topK(bad->ref(), 2);
    ASSERT_FALSE(bool(top));
    EXPECT_EQ(top.code(), ErrorCode::InvalidArgument) << top.error();
  }
}

// Decoding's controls edit a step's scores before they are ranked: a ban
// is -inf, a penalty divides a positive score and multiplies a negative
// one, edits apply in order. The device's own editScores and the default
// built on copy() (which a device without its own runs) agree.
TEST_P(Primitives, EditScoresBansAndPenalizesInOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  using Edit = Device::ScoreEdit;
  std::vector<Edit> edits = {{Edit::Ban, 1},
                             {Edit::Penalize, 2, 2.0f},
                             {Edit::Penalize, 3, 2.0f},
                             {Edit::Penalize, 5, 4.0f},
                             {Edit::Penalize, 5, 0.5f},
                             {Edit::Ban, 7},
                             {Edit::Penalize, 7, 3.0f}};
  std::vector<float> expected = {1, -inf, 1.5f, -4, 0, 3, 7, -inf};
  for (bool base : {false, true}) {
    SCOPED_TRACE(base ? "Device::editScores" : "the device's own");
    Tensor t =
        upload(DType::F32, {2, 4}, std::vector<float>{1, 9, 3, -2, 0, 6, 7, 8});
    Status edited = base ? device->Device::editScores(t.ref(), edits)
                         : device->editScores(t.ref(), edits);
    ASSERT_TRUE(edited.ok()) << edited.message();
    EXPECT_EQ(download<float>(t), expected);
    // A cell outside the scores is refused, and nothing is edited.
    Tensor u = upload(DType::F32, {2, 4}, std::vector<float>(8, 1.0f));
    for (int64_t cell : {int64_t(-1), int64_t(8)}) {
      Status refused = base ? device->Device::editScores(
                                  u.ref(), {{Edit::Ban, 0}, {Edit::Ban, cell}})
                            : device->editScores(
                                  u.ref(), {{Edit::Ban, 0}, {Edit::Ban, cell}});
      EXPECT_FALSE(refused.ok()) << cell;
      EXPECT_NE(refused.message().find("outside"), std::string::npos)
          << refused.message();
    }
    EXPECT_EQ(download<float>(u), std::vector<float>(8, 1.0f));
  }
}

//===----------------------------------------------------------------------===//
// Library calls by name
//===----------------------------------------------------------------------===//

DEVICE_SUITE(LibraryCalls);

TEST_P(LibraryCalls, MatmulByName) {
  // [2, 3] x [3, 2], and with the rhs given transposed.
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};
  Tensor lhs = upload(DType::F32, {2, 3}, a);
  Tensor rhs = upload(DType::F32, {3, 2}, b);
  ErrorOr<Tensor> out = Tensor::onDevice(*device, DType::F32, {2, 2});
  ASSERT_TRUE(bool(out)) << out.error();
  runtime::LibraryCallArgs call{{lhs.ref(), rhs.ref(), out->ref()},
                                loom::abi::MatmulCall{}.encode()};
  Status status = device->callLibrary("matmul", call);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(device->synchronize().ok());
  EXPECT_EQ(download<float>(*out), (std::vector<float>{4, 5, 10, 11}));

  Tensor rhsT =
      upload(DType::F32, {2, 3}, std::vector<float>{1, 0, 1, 0, 1, 1});
  call = {{lhs.ref(), rhsT.ref(), out->ref()},
          loom::abi::MatmulCall{false, true}.encode()};
  status = device->callLibrary("matmul", call);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(device->synchronize().ok());
  EXPECT_EQ(download<float>(*out), (std::vector<float>{4, 5, 10, 11}));
}

TEST_P(LibraryCalls, AnUnknownKernelIsNotFound) {
  Tensor x = upload(DType::F32, {2}, std::vector<float>{1, 2});
  ErrorOr<Tensor> y = Tensor::onDevice(*device, DType::F32, {2});
  ASSERT_TRUE(bool(y)) << y.error();
  for (const char *name : {"no_such_kernel", "", "Matmul", "matmul "}) {
    Status status = device->callLibrary(name, {{x.ref(), y->ref()}, {}});
    EXPECT_EQ(status.code(), ErrorCode::NotFound)
        << "'" << name << "': " << status.message();
  }
  EXPECT_EQ(download<float>(*y), (std::vector<float>{0, 0}));
}

TEST_P(LibraryCalls, EveryKernelOfTheConventionIsThere) {
  // Called without tensors, each kernel is found and refuses the call.
  for (const std::string &name : loom::abi::libraryKernelNames()) {
    Status status = device->callLibrary(name, {});
    EXPECT_NE(status.code(), ErrorCode::NotFound) << name;
    EXPECT_FALSE(status.ok()) << name << " accepted a call without tensors";
  }
}

TEST_P(LibraryCalls, DamagedAttributesAreCorrupt) {
  Tensor x = upload(DType::F32, {3, 4}, std::vector<float>(12, 1.0f));
  Tensor w = upload(DType::F32, {4, 5}, std::vector<float>(20, 1.0f));
  ErrorOr<Tensor> y = Tensor::onDevice(*device, DType::F32, {3, 5});
  ASSERT_TRUE(bool(y)) << y.error();
  struct Damaged {
    const char *kernel;
    loom::abi::CallAttrs attrs;
  };
  const Damaged damaged[] = {
      {"matmul", {{0, 0}, {1.0}}}, // a float too many
      {"matmul", {{0}, {}}},       // an int too few
      {"matmul", {{0, 2}, {}}},    // a flag that is neither 0 nor 1
  };
  for (const Damaged &d : damaged) {
    Status status =
        device->callLibrary(d.kernel, {{x.ref(), w.ref(), y->ref()}, d.attrs});
    EXPECT_EQ(status.code(), ErrorCode::Corrupt) << status.message();
    EXPECT_EQ(status.message().rfind(d.kernel, 0), 0u) << status.message();
  }
  // linear's weight is [N, K].
  Tensor wt = upload(DType::F32, {5, 4}, std::vector<float>(20, 1.0f));
  for (loom::abi::CallAttrs attrs : {loom::abi::CallAttrs{{0, 0, 7}, {}},
                                     loom::abi::CallAttrs{{2, 0, 0}, {}},
                                     loom::abi::CallAttrs{{0, 0}, {}}}) {
    Status status =
        device->callLibrary("linear", {{x.ref(), wt.ref(), y->ref()}, attrs});
    EXPECT_EQ(status.code(), ErrorCode::Corrupt) << status.message();
  }
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

/// Code compiled for the lowest portable x86-64 level when this CPU has it
/// (no generated code runs, but the loader checks the target all the same),
/// else for this machine.
runtime::CpuTarget hostCpuTarget() {
  runtime::CpuTarget target;
  target.set_triple(cpu::hostCpuArchitecture() + "-unknown-linux-gnu");
  bool portable = !loom::abi::highestCpuLevel(cpu::hostCpuFeatures()).empty();
  const std::string level =
      loom::abi::portableCpuLevels().front(); // "x86-64-v2"
  target.set_cpu(portable ? level : "generic");
  target.set_level(portable ? level : loom::abi::kNativeCpuLevel);
  if (portable)
    for (const std::string &feature : loom::abi::cpuLevelFeatures(level))
      target.add_features(feature);
  target.set_vector_bits(128);
  target.set_alignment(64);
  return target;
}

void addDim(runtime::Buffer &buffer, int64_t size) {
  buffer.add_shape()->set_size(size);
}

/// A dim that is symbol `symbol` itself.
void addSymbolDim(runtime::Buffer &buffer, int32_t symbol) {
  runtime::Monomial *term = buffer.add_shape()->mutable_poly()->add_terms();
  term->set_coefficient(1);
  term->add_symbols(symbol);
}

constexpr int64_t kMaxRows = 8;
const std::vector<float> kB = {1, 0, 0, 1, 1, 1}; // [3, 2]

/// @main(a [rows, 3]) -> y [rows, 2] = (a x b) x w^T, for a constant b
/// [3, 2] and a parameter w [2, 2], through a temporary in the arena: two
/// library matmuls, for `target`.
runtime::Executable matmulExecutable(runtime::Executable::Target target) {
  using runtime::Buffer;
  runtime::Executable exe;
  exe.set_format_version(kFormatVersion);
  exe.set_target(target);
  *exe.mutable_cpu_target() = hostCpuTarget();
  exe.add_symbols("rows");
  exe.set_max_tokens(kMaxRows);
  exe.set_max_len(kMaxRows);
  exe.set_max_batch(kMaxRows);

  Buffer &a = *exe.add_buffers(); // 0
  a.set_name("main/input/a");
  a.set_role(Buffer::INPUT);
  a.set_dtype(Buffer::F32);
  addSymbolDim(a, 0);
  addDim(a, 3);
  Buffer &b = *exe.add_buffers(); // 1
  b.set_name("b");
  b.set_role(Buffer::CONSTANT);
  b.set_dtype(Buffer::F32);
  addDim(b, 3);
  addDim(b, 2);
  b.set_data(std::string(reinterpret_cast<const char *>(kB.data()),
                         kB.size() * sizeof(float)));
  Buffer &w = *exe.add_buffers(); // 2
  w.set_name("w");
  w.set_role(Buffer::PARAMETER);
  w.set_dtype(Buffer::F32);
  addDim(w, 2);
  addDim(w, 2);
  Buffer &t = *exe.add_buffers(); // 3
  t.set_name("main/%ab");
  t.set_role(Buffer::TEMPORARY);
  t.set_dtype(Buffer::F32);
  addSymbolDim(t, 0);
  addDim(t, 2);
  t.set_arena_offset(64);
  t.set_max_bytes(kMaxRows * 2 * 4);
  Buffer &y = *exe.add_buffers(); // 4
  y.set_name("main/output/y");
  y.set_role(Buffer::OUTPUT);
  y.set_dtype(Buffer::F32);
  addSymbolDim(y, 0);
  addDim(y, 2);

  runtime::Kernel &matmul = *exe.add_kernels();
  matmul.set_name("matmul");
  matmul.set_symbol("matmul");
  matmul.set_kind(runtime::Kernel::LIBRARY);
  matmul.set_num_args(3);

  runtime::EntryPoint &entry = *exe.add_entry_points();
  entry.set_name("main");
  entry.set_arena_bytes(64 + kMaxRows * 2 * 4);
  entry.add_inputs(0);
  entry.add_outputs(4);
  auto addStep = [&](std::vector<int> args, loom::abi::MatmulCall call) {
    runtime::Step &step = *entry.add_steps();
    step.set_kernel(0);
    for (int arg : args)
      step.add_args(arg);
    for (int64_t v : call.encode().ints)
      step.add_int_attrs(v);
  };
  addStep({0, 1, 3}, loom::abi::MatmulCall{});
  addStep({3, 2, 4}, loom::abi::MatmulCall{false, true});
  exe.set_code_checksum(fnv1a64(exe.code()));
  // Library kernels only: the code of a CUDA executable holds no kernel.
  if (target == runtime::Executable::CUDA)
    test::retargetToCuda(exe);
  return exe;
}

/// (a x b) x w^T on the host.
std::vector<float> expectedY(const std::vector<float> &a,
                             const std::vector<float> &w) {
  int64_t rows = static_cast<int64_t>(a.size()) / 3;
  std::vector<float> y(rows * 2);
  for (int64_t r = 0; r < rows; ++r) {
    float ab[2] = {0, 0};
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        ab[j] += a[r * 3 + k] * kB[k * 2 + j];
    for (int j = 0; j < 2; ++j)
      y[r * 2 + j] = ab[0] * w[j * 2 + 0] + ab[1] * w[j * 2 + 1];
  }
  return y;
}

DEVICE_SUITE(Sessions);

TEST_P(Sessions, RunAHandWrittenExecutable) {
  runtime::Executable exe = matmulExecutable(device->target());
  Status valid = validateExecutable(exe);
  ASSERT_TRUE(valid.ok()) << valid.message();
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(exe);
  ASSERT_TRUE(bool(program)) << program.error();
  EXPECT_EQ((*program)->parameterNames(), std::vector<std::string>{"w"});
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ASSERT_TRUE(bool(session)) << session.error();
  EXPECT_EQ((*session)->inputNames("main"), std::vector<std::string>{"a"});

  // State starts zeroed; set it, and it reads back.
  ErrorOr<Tensor> w0 = (*session)->getState("w");
  ASSERT_TRUE(bool(w0)) << w0.error();
  EXPECT_EQ(std::vector<float>(w0->f32(), w0->f32() + 4),
            std::vector<float>(4, 0.0f));
  std::vector<float> w = {1, 2, 3, -4};
  Status status =
      (*session)->setState("w", TensorRef{w.data(), DType::F32, {2, 2}});
  ASSERT_TRUE(status.ok()) << status.message();
  ErrorOr<Tensor> w1 = (*session)->getState("w");
  ASSERT_TRUE(bool(w1)) << w1.error();
  EXPECT_EQ(std::vector<float>(w1->f32(), w1->f32() + 4), w);

  // Several batch sizes: the shapes follow `rows`, the arena is reused.
  for (int64_t rows : {int64_t(3), int64_t(1), kMaxRows, int64_t(2)}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<float> a(rows * 3);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = static_cast<float>(int(i % 7) - 3) * 0.5f;
    std::vector<Tensor> staging;
    ErrorOr<TensorRef> input = runtime::deviceInput(
        *device, TensorRef{a.data(), DType::F32, {rows, 3}}, staging);
    ASSERT_TRUE(bool(input)) << input.error();
    ErrorOr<std::vector<runtime::NamedTensor>> outputs =
        (*session)->run("main", {*input});
    ASSERT_TRUE(bool(outputs)) << outputs.error();
    ASSERT_EQ(outputs->size(), 1u);
    const runtime::NamedTensor &y = outputs->front();
    EXPECT_EQ(y.name, "y");
    EXPECT_EQ(y.tensor.shape(), (std::vector<int64_t>{rows, 2}));
    EXPECT_EQ(y.tensor.device(), device.get());
    EXPECT_EQ(download<float>(y.tensor), expectedY(a, w));
  }
}

// One step alone (what a kernel replay runs on the device under test), and
// run() with LOOM_SYNC_EVERY_STEP=1, which synchronizes after every step.
TEST_P(Sessions, RunOneStepAloneAndSynchronizeEveryStep) {
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(matmulExecutable(device->target()));
  ASSERT_TRUE(bool(program)) << program.error();
  ::setenv("LOOM_SYNC_EVERY_STEP", "1", 1);
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ::unsetenv("LOOM_SYNC_EVERY_STEP");
  ASSERT_TRUE(bool(session)) << session.error();
  std::vector<float> w = {1, 2, 3, -4};
  ASSERT_TRUE(
      (*session)->setState("w", TensorRef{w.data(), DType::F32, {2, 2}}).ok());
  std::vector<float> a = {1, -2, 0.5f, 3, 0, -1};
  std::vector<Tensor> staging;
  ErrorOr<TensorRef> input = runtime::deviceInput(
      *device, TensorRef{a.data(), DType::F32, {2, 3}}, staging);
  ASSERT_TRUE(bool(input)) << input.error();
  ErrorOr<std::vector<runtime::NamedTensor>> outputs =
      (*session)->run("main", {*input});
  ASSERT_TRUE(bool(outputs)) << outputs.error();
  EXPECT_EQ(download<float>(outputs->front().tensor), expectedY(a, w));

  // Step 1, y = ab w^T, alone on tensors of this test's own.
  std::vector<float> ab(4);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        ab[r * 2 + j] += a[r * 3 + k] * kB[k * 2 + j];
  ErrorOr<TensorRef> abOnDevice = runtime::deviceInput(
      *device, TensorRef{ab.data(), DType::F32, {2, 2}}, staging);
  ErrorOr<TensorRef> wOnDevice = runtime::deviceInput(
      *device, TensorRef{w.data(), DType::F32, {2, 2}}, staging);
  ErrorOr<Tensor> y = Tensor::onDevice(*device, DType::F32, {2, 2});
  ASSERT_TRUE(abOnDevice && wOnDevice && y);
  Status ran =
      (*session)->runStep("main", 1, {*abOnDevice, *wOnDevice, y->ref()});
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(download<float>(*y), expectedY(a, w));

  Status wrongCount = (*session)->runStep("main", 1, {*abOnDevice});
  EXPECT_EQ(wrongCount.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(
      wrongCount.message().find("'main' step 1 (matmul) takes 3 arguments"),
      std::string::npos)
      << wrongCount.message();
  EXPECT_FALSE((*session)->runStep("main", 2, {}).ok());
  EXPECT_FALSE((*session)->runStep("absent", 0, {}).ok());
}

TEST_P(Sessions, RefuseInputsBeyondTheBoundsAndOfTheWrongShape) {
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(matmulExecutable(device->target()));
  ASSERT_TRUE(bool(program)) << program.error();
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ASSERT_TRUE(bool(session)) << session.error();
  std::vector<float> a((kMaxRows + 1) * 3, 1.0f);
  std::vector<Tensor> staging;
  ErrorOr<TensorRef> tooMany = runtime::deviceInput(
      *device, TensorRef{a.data(), DType::F32, {kMaxRows + 1, 3}}, staging);
  ASSERT_TRUE(bool(tooMany)) << tooMany.error();
  ErrorOr<std::vector<runtime::NamedTensor>> outputs =
      (*session)->run("main", {*tooMany});
  ASSERT_FALSE(bool(outputs));
  EXPECT_EQ(outputs.code(), ErrorCode::InvalidArgument) << outputs.error();
  EXPECT_NE(outputs.error().find("larger than"), std::string::npos)
      << outputs.error();

  ErrorOr<TensorRef> wide = runtime::deviceInput(
      *device, TensorRef{a.data(), DType::F32, {3, 4}}, staging);
  ASSERT_TRUE(bool(wide)) << wide.error();
  outputs = (*session)->run("main", {*wide});
  ASSERT_FALSE(bool(outputs));
  EXPECT_EQ(outputs.code(), ErrorCode::InvalidArgument) << outputs.error();

  outputs = (*session)->run("encode", {*wide});
  ASSERT_FALSE(bool(outputs));
  EXPECT_EQ(outputs.code(), ErrorCode::NotFound) << outputs.error();
}

TEST_P(Sessions, RefuseAnExecutableForAnotherTarget) {
  // A CPU executable on any other device, and on the CPU one for CUDA.
  runtime::Executable::Target other =
      device->target() == runtime::Executable::CPU ? runtime::Executable::CUDA
                                                   : runtime::Executable::CPU;
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(matmulExecutable(other));
  ASSERT_TRUE(bool(program)) << program.error();
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ASSERT_FALSE(bool(session));
  EXPECT_EQ(session.code(), ErrorCode::Unsupported) << session.error();
  EXPECT_NE(session.error().find(runtime::Executable::Target_Name(other)),
            std::string::npos)
      << session.error();
  // Nor does the device load its code when asked directly.
  ErrorOr<std::unique_ptr<runtime::DeviceCode>> code =
      device->loadCode((*program)->executable());
  ASSERT_FALSE(bool(code));
  EXPECT_EQ(code.code(), ErrorCode::Unsupported) << code.error();
}

TEST_P(Sessions, RefuseACpuExecutableWhereTheDevicesDiffer) {
  // Only meaningful with a second kind of device beside the CPU.
  if (device->target() == runtime::Executable::CPU)
    GTEST_SKIP() << "the " << device->name()
                 << " device runs CPU executables; this checks another "
                    "device refuses them";
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(matmulExecutable(runtime::Executable::CPU));
  ASSERT_TRUE(bool(program)) << program.error();
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ASSERT_FALSE(bool(session));
  EXPECT_EQ(session.code(), ErrorCode::Unsupported) << session.error();
}

TEST_P(Sessions, RefuseALibraryKernelTheRuntimeLacks) {
  runtime::Executable exe = matmulExecutable(device->target());
  exe.mutable_kernels(0)->set_symbol("matmul_v9");
  ErrorOr<std::shared_ptr<const runtime::Program>> program =
      runtime::Program::create(exe);
  ASSERT_TRUE(bool(program)) << program.error();
  ErrorOr<std::unique_ptr<runtime::Session>> session =
      runtime::Session::create(*program, device);
  ASSERT_FALSE(bool(session));
  EXPECT_EQ(session.code(), ErrorCode::Unsupported) << session.error();
  EXPECT_NE(session.error().find("matmul_v9"), std::string::npos)
      << session.error();
}

} // namespace
