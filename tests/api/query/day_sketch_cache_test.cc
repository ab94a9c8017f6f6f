// DaySketchCache: a key's days come back only for the same file, routing
// count and prefix; days read later join those kept (a day kept first stays
// as it was); a day kept without a sketch stays "no visitors"; another
// file's or shard count's days are another entry; each day's estimate is
// its visitors' count (exact sketches, counted by the test's own sets); an
// entry is charged its sketches; a read cache of 0 bytes keeps nothing.
// Which entries go first is the read cache's (read_cache_test.cc).
#include "query/cache/day_sketch_cache.h"

#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

namespace clickatron::api {
namespace {

const ServedFile kFile{7, 0xabcdef01};
const std::string kPrefix = "~u|jehiah.\n";

// The sketch of visitors v-first .. v-(first+count-1), and their count by
// the test's own set.
struct Visitors {
  std::shared_ptr<const UniqueSketch> sketch;
  uint64_t distinct = 0;
};
Visitors MakeVisitors(int first, int count) {
  UniqueSketch sketch;
  std::set<std::string> tokens;
  for (int i = first; i < first + count; ++i) {
    const std::string token = fmt::format("v-{}", i);
    tokens.insert(token);
    sketch.Add(HashVisitor(token));
  }
  return Visitors{std::make_shared<const UniqueSketch>(std::move(sketch)), tokens.size()};
}

TEST(DaySketchCacheTest, DaysComeBackForTheSameFileCountAndPrefixOnly) {
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  const Visitors a = MakeVisitors(0, 40), b = MakeVisitors(20, 30);
  cache.Add(kFile, 2, kPrefix, {KeptDay{20001, b.sketch}, KeptDay{20000, a.sketch}});
  const auto days = cache.Find(kFile, 2, kPrefix);
  ASSERT_NE(days, nullptr);
  ASSERT_EQ(days->size(), 2u);
  const KeptDay* first = DaySketchCache::DayIn(*days, 20000);
  const KeptDay* second = DaySketchCache::DayIn(*days, 20001);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(first->sketch, a.sketch);
  EXPECT_EQ(second->sketch, b.sketch);
  EXPECT_EQ(first->estimate, a.distinct);
  EXPECT_EQ(second->estimate, b.distinct);
  EXPECT_EQ(DaySketchCache::DayIn(*days, 20002), nullptr) << "a day never read";

  EXPECT_EQ(cache.Find(ServedFile{8, kFile.crc32}, 2, kPrefix), nullptr) << "another generation";
  EXPECT_EQ(cache.Find(ServedFile{7, 0x12345678}, 2, kPrefix), nullptr) << "another file of that number";
  EXPECT_EQ(cache.Find(kFile, 3, kPrefix), nullptr) << "routed by another shard count";
  EXPECT_EQ(cache.Find(kFile, 2, "~u|jehiah.\nJP"), nullptr) << "one subtotal value of the same key";
}

TEST(DaySketchCacheTest, DaysReadLaterJoinThoseKeptAndADayWithoutVisitorsIsKept) {
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  const Visitors a = MakeVisitors(0, 5), b = MakeVisitors(100, 7), c = MakeVisitors(200, 3);
  cache.Add(kFile, 1, kPrefix, {KeptDay{20010, a.sketch}, KeptDay{20012, nullptr}});
  // A later window: one day again (as another query found it), two new.
  cache.Add(kFile, 1, kPrefix, {KeptDay{20012, nullptr}, KeptDay{20011, b.sketch}, KeptDay{20009, c.sketch}});
  const auto days = cache.Find(kFile, 1, kPrefix);
  ASSERT_NE(days, nullptr);
  std::vector<int32_t> order;
  for (const KeptDay& d : *days) order.push_back(d.day);
  EXPECT_EQ(order, (std::vector<int32_t>{20009, 20010, 20011, 20012}));
  EXPECT_EQ(DaySketchCache::DayIn(*days, 20009)->estimate, c.distinct);
  EXPECT_EQ(DaySketchCache::DayIn(*days, 20010)->estimate, a.distinct);
  EXPECT_EQ(DaySketchCache::DayIn(*days, 20011)->estimate, b.distinct);
  const KeptDay* none = DaySketchCache::DayIn(*days, 20012);
  ASSERT_NE(none, nullptr) << "\"no record\" is an answer too";
  EXPECT_EQ(none->sketch, nullptr);
  EXPECT_EQ(none->estimate, 0u);
}

TEST(DaySketchCacheTest, ADayKeptWinsOverTheSameDayReadAgain) {
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  const Visitors first = MakeVisitors(0, 5), again = MakeVisitors(0, 5);  // equal, another object
  cache.Add(kFile, 1, kPrefix, {KeptDay{20010, first.sketch}});
  cache.Add(kFile, 1, kPrefix, {KeptDay{20010, again.sketch}, KeptDay{20011, nullptr}});
  const auto days = cache.Find(kFile, 1, kPrefix);
  ASSERT_NE(days, nullptr);
  ASSERT_EQ(days->size(), 2u);
  EXPECT_EQ(DaySketchCache::DayIn(*days, 20010)->sketch, first.sketch)
      << "the object kept first stays (a union keyed by it stays valid)";
}

TEST(DaySketchCacheTest, AnotherShardCountsDaysAreAnotherEntry) {
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  const Visitors a = MakeVisitors(0, 5), b = MakeVisitors(50, 9);
  cache.Add(kFile, 1, kPrefix, {KeptDay{20010, a.sketch}, KeptDay{20011, a.sketch}});
  cache.Add(kFile, 2, kPrefix, {KeptDay{20010, b.sketch}});
  ASSERT_NE(cache.Find(kFile, 1, kPrefix), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix)->size(), 2u);
  const auto days = cache.Find(kFile, 2, kPrefix);
  ASSERT_NE(days, nullptr);
  ASSERT_EQ(days->size(), 1u);
  EXPECT_EQ(days->front().sketch, b.sketch);
}

TEST(DaySketchCacheTest, AnotherFilesDaysAreAnotherEntry) {
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  const Visitors a = MakeVisitors(0, 5), b = MakeVisitors(50, 9);
  cache.Add(kFile, 1, kPrefix, {KeptDay{20010, a.sketch}, KeptDay{20011, a.sketch}});
  const ServedFile next{8, 0x0badf00d};
  cache.Add(next, 1, kPrefix, {KeptDay{20010, b.sketch}});
  const auto days = cache.Find(next, 1, kPrefix);
  ASSERT_NE(days, nullptr);
  ASSERT_EQ(days->size(), 1u) << "the old file's days are not the new one's";
  EXPECT_EQ(days->front().sketch, b.sketch);
  EXPECT_EQ(read_cache.Figures(CacheKind::kDaySketches).entries, 2u);
}

TEST(DaySketchCacheTest, AnEntryIsChargedItsSketches) {
  const Visitors v = MakeVisitors(0, 300);  // 2.4 KB of hashes
  ReadCache read_cache(1 << 20);
  DaySketchCache cache(read_cache);
  std::vector<KeptDay> ten;
  for (int32_t d = 0; d < 10; ++d) ten.push_back(KeptDay{20000 + d, v.sketch});
  cache.Add(kFile, 1, "one", ten);
  EXPECT_GT(read_cache.Figures(CacheKind::kDaySketches).bytes, 10 * v.sketch->MemoryBytes())
      << "charged for the sketches it holds";
}

TEST(DaySketchCacheTest, AReadCacheOfZeroBytesKeepsNothing) {
  ReadCache nothing(0);
  DaySketchCache cache(nothing);
  EXPECT_FALSE(cache.enabled());
  cache.Add(kFile, 1, kPrefix, {KeptDay{20000, MakeVisitors(0, 3).sketch}});
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix), nullptr);
  EXPECT_EQ(nothing.Figures(CacheKind::kDaySketches).entries, 0u);
}

}  // namespace
}  // namespace clickatron::api
