// DayRunCache: a run's value comes back only for the same file, routing count,
// prefix and exactly the same days; short runs are never kept; another
// file's sums are another entry; a read cache of 0 bytes keeps nothing.
// Which entries go first is the read cache's (read_cache_test.cc).
#include "query/cache/day_run_cache.h"

#include <gtest/gtest.h>

#include <numeric>

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::day_run_cache_test {
namespace {

// The runs cache keeps any value; sums per value stand in for unions here
// (they compare with ==).
using ValueCounts = std::vector<std::pair<std::string, int64_t>>;
using DaySumCache = DayRunCache<ValueCounts>;

std::vector<int64_t> Days(int64_t first, int64_t count) {
  std::vector<int64_t> days(static_cast<size_t>(count));
  std::iota(days.begin(), days.end(), first);
  return days;
}

const ServedFile kFile{7, 0xabcdef01};
const std::string kPrefix = "c.u|jehiah.";

TEST(DayRunCacheTest, SumsComeBackForTheSameFileCountPrefixAndDaysOnly) {
  ReadCache read_cache(1 << 20);
  DaySumCache cache(read_cache, CacheKind::kDayUnions);
  const std::vector<int64_t> days = Days(20000, 30);
  cache.Put(kFile, 2, kPrefix, days, {{"JP", 4}, {"US", 12}}, 64);
  const auto sums = cache.Find(kFile, 2, kPrefix, days);
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(*sums, (ValueCounts{{"JP", 4}, {"US", 12}}));

  EXPECT_EQ(cache.Find(ServedFile{8, kFile.crc32}, 2, kPrefix, days), nullptr) << "another generation";
  EXPECT_EQ(cache.Find(ServedFile{7, 0x12345678}, 2, kPrefix, days), nullptr) << "another file of that number";
  EXPECT_EQ(cache.Find(kFile, 3, kPrefix, days), nullptr) << "routed by another shard count";
  EXPECT_EQ(cache.Find(kFile, 2, "r.u|jehiah.", days), nullptr) << "another subtotal namespace";
  EXPECT_EQ(cache.Find(kFile, 2, kPrefix, Days(20001, 30)), nullptr) << "a window a day later";
  // The same first and last day and count, another day between them (a
  // key with a day without data inside one window and not the other).
  std::vector<int64_t> sparse, other;
  for (int64_t i = 0; i < 10; ++i) sparse.push_back(21000 + 2 * i);
  other = sparse;
  other[5] += 1;
  cache.Put(kFile, 2, kPrefix, sparse, {{"US", 3}}, 64);
  ASSERT_NE(cache.Find(kFile, 2, kPrefix, sparse), nullptr);
  EXPECT_EQ(cache.Find(kFile, 2, kPrefix, other), nullptr) << "same ends and count, other days";
  EXPECT_NE(cache.Find(kFile, 2, kPrefix, days), nullptr) << "still kept";
}

TEST(DayRunCacheTest, ShortRunsAreNotKept) {
  ReadCache read_cache(1 << 20);
  DaySumCache cache(read_cache, CacheKind::kDayUnions);
  const std::vector<int64_t> days = Days(20000, DaySumCache::kMinDays - 1);
  cache.Put(kFile, 1, kPrefix, days, {{"US", 1}}, 64);
  EXPECT_EQ(read_cache.Figures(CacheKind::kDayUnions).entries, 0u);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, days), nullptr);
}

TEST(DayRunCacheTest, AnotherFilesSumsAreAnotherEntry) {
  ReadCache read_cache(1 << 20);
  DaySumCache cache(read_cache, CacheKind::kDayUnions);
  const std::vector<int64_t> days = Days(20000, 10);
  cache.Put(kFile, 1, kPrefix, days, {{"US", 1}}, 64);
  const ServedFile newer{kFile.generation + 1, 0x55};
  cache.Put(newer, 1, kPrefix, days, {{"US", 2}}, 64);
  EXPECT_EQ(read_cache.Figures(CacheKind::kDayUnions).entries, 2u);
  ASSERT_NE(cache.Find(kFile, 1, kPrefix, days), nullptr);
  EXPECT_EQ(*cache.Find(kFile, 1, kPrefix, days), (ValueCounts{{"US", 1}}));
  const auto sums = cache.Find(newer, 1, kPrefix, days);
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(*sums, (ValueCounts{{"US", 2}}));
}

TEST(DayRunCacheTest, AReadCacheOfZeroBytesKeepsNothing) {
  ReadCache nothing(0);
  DaySumCache off(nothing, CacheKind::kDayUnions);
  EXPECT_FALSE(off.enabled());
  const std::vector<int64_t> a = Days(20000, 365);
  off.Put(kFile, 1, kPrefix, a, {{"US", 1}}, 64);
  EXPECT_EQ(off.Find(kFile, 1, kPrefix, a), nullptr);
}

}  // namespace
}  // namespace clickatron::api::day_run_cache_test
