#include "table_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace clickatron::realtime::table_arena_test {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

bool AlignedTo(const void* at, size_t alignment) { return reinterpret_cast<uintptr_t>(at) % alignment == 0; }

// What the budget is charged (bytes()) follows the mappings: a request of a
// whole chunk takes one chunk, not two; the fuller of two chunks is the one
// left behind; a block goes back when freed.
TEST(TableArenaTest, BytesFollowTheMappingsAndRequestsAreAligned) {
  TableArena arena;
  EXPECT_EQ(arena.bytes(), 0u);
  void* whole = arena.allocate(kHugePageBytes, 8);  // exactly a chunk: one mapping, nothing left in it
  ASSERT_NE(whole, nullptr);
  std::memset(whole, 1, kHugePageBytes);
  EXPECT_EQ(arena.bytes(), kHugePageBytes);

  void* small = arena.allocate(64, 64);  // a new chunk, which serves what follows
  EXPECT_TRUE(AlignedTo(small, 64));
  EXPECT_EQ(arena.bytes(), kHugePageBytes + 64);

  // Nearly a chunk: a mapping of its own (8 bytes left in it); the chunk
  // with more room left keeps serving.
  void* nearly = arena.allocate(kHugePageBytes - 8, 64);
  EXPECT_TRUE(AlignedTo(nearly, 64));
  std::memset(nearly, 2, kHugePageBytes - 8);
  EXPECT_EQ(arena.bytes(), 3 * kHugePageBytes - (kHugePageBytes - 64));
  void* next = arena.allocate(16, 16);
  EXPECT_EQ(static_cast<char*>(next), static_cast<char*>(small) + 64);  // from the current chunk
  EXPECT_EQ(arena.bytes(), 3 * kHugePageBytes - (kHugePageBytes - 80));

  // Larger than a chunk: rounded up to huge pages; its 1 MiB tail has less
  // room than the current chunk, which stays current.
  void* large = arena.allocate(3 * kMiB, 8);
  std::memset(large, 3, 3 * kMiB);
  EXPECT_EQ(arena.bytes(), 5 * kHugePageBytes - (kHugePageBytes - 80));
  EXPECT_EQ(static_cast<char*>(arena.allocate(16, 16)), static_cast<char*>(next) + 16);

  // A block comes zero-filled and goes back whole.
  const size_t before = arena.bytes();
  auto* block = static_cast<unsigned char*>(arena.AllocateBlock(3 * kMiB));
  EXPECT_TRUE(AlignedTo(block, kHugePageBytes));
  EXPECT_EQ(block[0] + block[3 * kMiB - 1], 0);
  EXPECT_EQ(arena.bytes(), before + 2 * kHugePageBytes);
  arena.FreeBlock(block, 3 * kMiB);
  EXPECT_EQ(arena.bytes(), before);
}

}  // namespace
}  // namespace clickatron::realtime::table_arena_test
