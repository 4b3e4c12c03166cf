//===- MappedBlocksTest.cpp - Large host blocks kept for reuse ------------===//

#include "runtime/cpu/MappedBlocks.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace loom;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

bool allZero(const void *p, size_t bytes) {
  const auto *c = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < bytes; ++i)
    if (c[i])
      return false;
  return true;
}

TEST(MappedBlocks, ClassesWasteAtMostAQuarter) {
  for (size_t bytes = kMiB; bytes < 64 * kMiB; bytes += 12345) {
    size_t size = cpu::MappedBlocks::classBytes(bytes);
    ASSERT_GE(size, bytes);
    ASSERT_LE(size, bytes + bytes / 4) << bytes;
    ASSERT_EQ(size % 4096, 0u) << bytes;
  }
  // Sizes a quarter apart share a class only within it.
  EXPECT_EQ(cpu::MappedBlocks::classBytes(4 * kMiB + 1),
            cpu::MappedBlocks::classBytes(5 * kMiB));
  EXPECT_NE(cpu::MappedBlocks::classBytes(5 * kMiB),
            cpu::MappedBlocks::classBytes(5 * kMiB + 1));
}

TEST(MappedBlocks, AReusedBlockIsZeroedAgain) {
  cpu::MappedBlocks blocks(64 * kMiB);
  const size_t bytes = 3 * kMiB + 100;
  auto first = blocks.allocate(bytes);
  ASSERT_TRUE(bool(first)) << first.error();
  ASSERT_TRUE(allZero(*first, bytes));
  std::memset(*first, 0xab, bytes);
  blocks.release(*first, bytes);
  EXPECT_EQ(blocks.keptBytes(), cpu::MappedBlocks::classBytes(bytes));
  // A request of the same class gets the same block, zeroed.
  const size_t again = 3 * kMiB + 5000;
  auto second = blocks.allocate(again);
  ASSERT_TRUE(bool(second)) << second.error();
  EXPECT_EQ(*second, *first);
  EXPECT_TRUE(allZero(*second, again));
  EXPECT_EQ(blocks.keptBytes(), 0u);
  blocks.release(*second, again);
}

// For memory its user writes before reading (a decoder's caches), a kept
// block comes back as it was: zeroing it would touch every page of room the
// caller may never reach.
TEST(MappedBlocks, AnUnspecifiedBlockIsReusedAsItWas) {
  cpu::MappedBlocks blocks(64 * kMiB);
  const size_t bytes = 6 * kMiB;
  auto first = blocks.allocate(bytes, runtime::Fill::Unspecified);
  ASSERT_TRUE(bool(first)) << first.error();
  std::memset(*first, 0x5a, bytes);
  blocks.release(*first, bytes);
  auto second = blocks.allocate(bytes, runtime::Fill::Unspecified);
  ASSERT_TRUE(bool(second)) << second.error();
  ASSERT_EQ(*second, *first);
  const auto *c = static_cast<const unsigned char *>(*second);
  EXPECT_EQ(c[0], 0x5a);
  EXPECT_EQ(c[bytes - 1], 0x5a);
  blocks.release(*second, bytes);
  // The same block asked for zeroed is zeroed.
  auto third = blocks.allocate(bytes);
  ASSERT_TRUE(bool(third)) << third.error();
  ASSERT_EQ(*third, *first);
  EXPECT_TRUE(allZero(*third, bytes));
  blocks.release(*third, bytes);
}

// A server's batches differ in rows and lengths from one to the next, so a
// request rarely finds a kept block of exactly its class; one up to twice
// its size serves it (the smallest such), and goes back to the kept blocks
// at its own size, not the request's.
TEST(MappedBlocks, ASmallerRequestTakesTheSmallestBlockUpToTwiceItsSize) {
  cpu::MappedBlocks blocks(64 * kMiB);
  auto big = blocks.allocate(8 * kMiB, runtime::Fill::Unspecified);
  auto mid = blocks.allocate(6 * kMiB, runtime::Fill::Unspecified);
  ASSERT_TRUE(big && mid);
  void *bigBlock = *big, *midBlock = *mid;
  blocks.release(bigBlock, 8 * kMiB);
  blocks.release(midBlock, 6 * kMiB);
  EXPECT_EQ(blocks.keptBytes(), 14 * kMiB);

  // 5 MiB fits both; the 6 MiB block is the smaller.
  auto five = blocks.allocate(5 * kMiB);
  ASSERT_TRUE(bool(five)) << five.error();
  EXPECT_EQ(*five, midBlock);
  EXPECT_TRUE(allZero(*five, 5 * kMiB));
  EXPECT_EQ(blocks.keptBytes(), 8 * kMiB);
  // 4 MiB fits the 8 MiB block (twice it), which is taken whole.
  auto four = blocks.allocate(4 * kMiB);
  ASSERT_TRUE(bool(four)) << four.error();
  EXPECT_EQ(*four, bigBlock);
  EXPECT_EQ(blocks.keptBytes(), 0u);

  // Released with the sizes asked for, they are kept at their own.
  blocks.release(*five, 5 * kMiB);
  blocks.release(*four, 4 * kMiB);
  EXPECT_EQ(blocks.keptBytes(), 14 * kMiB);
  blocks.trim();
  EXPECT_EQ(blocks.keptBytes(), 0u);
}

// More than twice the request would hold memory idle; a fresh mapping of
// the request's class serves it, and the large block stays kept.
TEST(MappedBlocks, ABlockOverTwiceTheRequestIsNotUsed) {
  cpu::MappedBlocks blocks(64 * kMiB);
  auto big = blocks.allocate(16 * kMiB, runtime::Fill::Unspecified);
  ASSERT_TRUE(bool(big)) << big.error();
  blocks.release(*big, 16 * kMiB);
  auto small = blocks.allocate(7 * kMiB);
  ASSERT_TRUE(bool(small)) << small.error();
  EXPECT_NE(*small, *big);
  EXPECT_EQ(blocks.keptBytes(), 16 * kMiB);
  blocks.release(*small, 7 * kMiB);
  EXPECT_EQ(blocks.keptBytes(),
            16 * kMiB + cpu::MappedBlocks::classBytes(7 * kMiB));
}

TEST(MappedBlocks, KeepsTheMostRecentlyFreedWithinItsLimit) {
  const size_t bytes = 4 * kMiB;
  cpu::MappedBlocks blocks(2 * bytes);
  void *p[3];
  for (void *&q : p) {
    auto block = blocks.allocate(bytes);
    ASSERT_TRUE(bool(block)) << block.error();
    q = *block;
  }
  for (void *q : p)
    blocks.release(q, bytes);
  EXPECT_EQ(blocks.keptBytes(), 2 * bytes);
  // The first freed went back to the system; the last freed comes first.
  auto reused = blocks.allocate(bytes);
  ASSERT_TRUE(bool(reused)) << reused.error();
  EXPECT_EQ(*reused, p[2]);
  blocks.release(*reused, bytes);
  blocks.trim();
  EXPECT_EQ(blocks.keptBytes(), 0u);
}

TEST(MappedBlocks, SmallBlocksGoToTheHostAllocator) {
  cpu::MappedBlocks blocks(64 * kMiB);
  auto small = blocks.allocate(1000);
  ASSERT_TRUE(bool(small)) << small.error();
  EXPECT_TRUE(allZero(*small, 1000));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*small) % 64, 0u);
  blocks.release(*small, 1000);
  EXPECT_EQ(blocks.keptBytes(), 0u);
}

} // namespace
