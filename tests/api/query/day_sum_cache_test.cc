// DaySumCache: a run's sums come back only for the same file, routing count,
// prefix and exactly the same days; short runs are never kept; another
// file's sums replace those kept for the run; the budget drops the least recently
// used; a budget of 0 keeps nothing.
#include "query/day_sum_cache.h"

#include <gtest/gtest.h>

#include <numeric>

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::day_sum_cache_test {
namespace {

std::vector<int64_t> Days(int64_t first, int64_t count) {
  std::vector<int64_t> days(static_cast<size_t>(count));
  std::iota(days.begin(), days.end(), first);
  return days;
}

const ServedFile kFile{7, 0xabcdef01};
const std::string kPrefix = "c.u|jehiah.";

TEST(DaySumCacheTest, SumsComeBackForTheSameFileCountPrefixAndDaysOnly) {
  DaySumCache cache(1 << 20);
  const std::vector<int64_t> days = Days(20000, 30);
  cache.Put(kFile, 2, kPrefix, days, {{"JP", 4}, {"US", 12}}, 64);
  const ValueCounts* sums = cache.Find(kFile, 2, kPrefix, days);
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

TEST(DaySumCacheTest, ShortRunsAreNotKept) {
  DaySumCache cache(1 << 20);
  const std::vector<int64_t> days = Days(20000, DaySumCache::kMinDays - 1);
  cache.Put(kFile, 1, kPrefix, days, {{"US", 1}}, 64);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, days), nullptr);
}

TEST(DaySumCacheTest, AnotherFilesSumsReplaceTheKeptOnes) {
  DaySumCache cache(1 << 20);
  const std::vector<int64_t> days = Days(20000, 10);
  cache.Put(kFile, 1, kPrefix, days, {{"US", 1}}, 64);
  const ServedFile newer{kFile.generation + 1, 0x55};
  cache.Put(newer, 1, kPrefix, days, {{"US", 2}}, 64);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, days), nullptr);
  const ValueCounts* sums = cache.Find(newer, 1, kPrefix, days);
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(*sums, (ValueCounts{{"US", 2}}));
}

TEST(DaySumCacheTest, TheLeastRecentlyUsedGoFirstAndZeroKeepsNothing) {
  // Room for two entries of 365 days (about 1.6 KB each), not three.
  DaySumCache cache(3500);
  const std::vector<int64_t> a = Days(20000, 365), b = Days(30000, 365), c = Days(40000, 365);
  cache.Put(kFile, 1, kPrefix, a, {{"US", 1}}, 64);
  cache.Put(kFile, 1, kPrefix, b, {{"US", 2}}, 64);
  ASSERT_NE(cache.Find(kFile, 1, kPrefix, a), nullptr);  // a is now the most recent
  cache.Put(kFile, 1, kPrefix, c, {{"US", 3}}, 64);
  EXPECT_LE(cache.bytes(), 3500u);
  EXPECT_NE(cache.Find(kFile, 1, kPrefix, a), nullptr);
  EXPECT_NE(cache.Find(kFile, 1, kPrefix, c), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, b), nullptr) << "the least recently used was dropped";

  DaySumCache off(0);
  EXPECT_FALSE(off.enabled());
  off.Put(kFile, 1, kPrefix, a, {{"US", 1}}, 64);
  EXPECT_EQ(off.Find(kFile, 1, kPrefix, a), nullptr);
}

}  // namespace
}  // namespace clickatron::api::day_sum_cache_test
