#include "clickatron/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace clickatron::huge_pages_test {
namespace {

TEST(HugePagesTest, AMappingIsAlignedZeroFilledAndWritable) {
  const size_t bytes = kHugePageBytes + 12345;  // rounded up to two huge pages
  EXPECT_EQ(HugePageRound(bytes), 2 * kHugePageBytes);
  EXPECT_EQ(HugePageRound(kHugePageBytes), kHugePageBytes);
  auto* at = static_cast<unsigned char*>(MapHugePages(bytes));
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(at) % kHugePageBytes, 0u);
  size_t nonzero = 0;
  for (size_t i = 0; i < HugePageRound(bytes); i += 4096) nonzero += at[i] != 0 ? 1 : 0;
  EXPECT_EQ(nonzero, 0u);
  at[0] = 1;
  at[HugePageRound(bytes) - 1] = 2;  // the whole rounded range is the caller's
  EXPECT_EQ(at[0] + at[HugePageRound(bytes) - 1], 3);
  UnmapHugePages(at, bytes);
}

TEST(HugePagesTest, ASizePastTheAddressSpaceIsRefused) {
  EXPECT_EQ(HugePageRound(SIZE_MAX), 0u);
  EXPECT_EQ(MapHugePages(SIZE_MAX), nullptr);
  EXPECT_EQ(MapHugePages(SIZE_MAX - kHugePageBytes), nullptr);
  EXPECT_EQ(MapHugePages(0), nullptr);
  EXPECT_THROW(HugePageAllocator<uint64_t>().allocate(SIZE_MAX / 4), std::bad_alloc);
}

TEST(HugePagesTest, AVectorKeepsItsValuesAcrossTheThreshold) {
  // Grows from operator new's arrays into mappings and across mappings.
  std::vector<uint64_t, HugePageAllocator<uint64_t>> values;
  const size_t n = 3 * kHugePageBytes / sizeof(uint64_t);
  for (size_t i = 0; i < n; ++i) values.push_back(i * 7);
  uint64_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += values[i] != i * 7 ? 1 : 0;
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values.data()) % kHugePageBytes, 0u);
  values.clear();
  values.shrink_to_fit();
  values.push_back(1);  // small again: from operator new
  EXPECT_EQ(values.front(), 1u);
}

}  // namespace
}  // namespace clickatron::huge_pages_test
