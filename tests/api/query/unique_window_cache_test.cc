// UniqueWindowCache: a window's archive part comes back only for the same
// file, routing count, run prefix, span, gap and unit boundaries; another
// file's part is another entry; a read cache of 0 bytes keeps nothing.
// Which entries go first is the read cache's (read_cache_test.cc).
#include "query/cache/unique_window_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace clickatron::api {
namespace {

const ServedFile kFile{7, 0xabcdef01};
const std::string kPrefix = "~u|jehiah.\n";
const HourSpan kSpan{86400 * 100, 86400 * 130};
const HourSpan kNoGap{0, 0};

std::vector<int64_t> Days(int64_t first, int count) {
  std::vector<int64_t> out;
  for (int i = 0; i < count; ++i) out.push_back((first + i) * 86400);
  return out;
}

UniqueWindowCache::Part PartOf(int64_t first_hour, int visitors) {
  UniqueSketch sketch;
  for (int i = 0; i < visitors; ++i) sketch.Add(HashVisitor("v" + std::to_string(i)));
  UniqueWindowCache::Part part;
  part.first_hour = first_hour;
  part.hours.push_back(HourSketch{first_hour, "", std::make_shared<const UniqueSketch>(std::move(sketch)), std::nullopt});
  return part;
}

TEST(UniqueWindowCacheTest, APartComesBackForTheSameFileAndWindowOnly) {
  ReadCache read_cache(1 << 20);
  UniqueWindowCache cache(read_cache);
  const std::vector<int64_t> splits = Days(101, 29);
  cache.Put(kFile, 1, kPrefix, kSpan, kNoGap, splits, PartOf(kSpan.begin_ts, 3));
  const auto kept = cache.Find(kFile, 1, kPrefix, kSpan, kNoGap, splits);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->first_hour, kSpan.begin_ts);
  ASSERT_EQ(kept->hours.size(), 1u);
  EXPECT_EQ(kept->hours[0].sketch->Estimate(), 3u);

  EXPECT_EQ(cache.Find(ServedFile{8, 0xabcdef01}, 1, kPrefix, kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(ServedFile{7, 1}, 1, kPrefix, kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(kFile, 2, kPrefix, kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, "~u|jehiah.\nUS", kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, HourSpan{kSpan.begin_ts + 3600, kSpan.end_ts}, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, kSpan, HourSpan{kSpan.begin_ts, kSpan.begin_ts + 86400}, splits), nullptr);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, kSpan, kNoGap, Days(101, 28)), nullptr);  // other units
  std::vector<int64_t> weekly = splits;
  weekly[3] += 3600;
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, kSpan, kNoGap, weekly), nullptr);

  // Another file's part is another entry: each file's lookups find their own.
  const ServedFile next{8, 0x12345678};
  cache.Put(next, 1, kPrefix, kSpan, kNoGap, splits, PartOf(kSpan.begin_ts, 5));
  ASSERT_NE(cache.Find(next, 1, kPrefix, kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(cache.Find(next, 1, kPrefix, kSpan, kNoGap, splits)->hours[0].sketch->Estimate(), 5u);
  EXPECT_EQ(cache.Find(kFile, 1, kPrefix, kSpan, kNoGap, splits)->hours[0].sketch->Estimate(), 3u);
  EXPECT_EQ(read_cache.Figures(CacheKind::kUniqueWindow).entries, 2u);
}

TEST(UniqueWindowCacheTest, AReadCacheOfZeroBytesKeepsNothing) {
  const std::vector<int64_t> splits = Days(101, 29);
  ReadCache nothing(0);
  UniqueWindowCache off(nothing);
  EXPECT_FALSE(off.enabled());
  off.Put(kFile, 1, kPrefix, kSpan, kNoGap, splits, PartOf(0, 2));
  EXPECT_EQ(off.Find(kFile, 1, kPrefix, kSpan, kNoGap, splits), nullptr);
  EXPECT_EQ(nothing.Figures(CacheKind::kUniqueWindow).entries, 0u);
}

}  // namespace
}  // namespace clickatron::api
