// RealtimeShardMap: the count of a record's own day picks its shard, and a
// reader is given every shard a key may be on.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "clickatron/realtime_shard_map.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"

namespace clickatron {
namespace {

ClusterConfig Changing(int before, int after, const std::string& since) {
  ClusterConfig c;
  c.realtime_shards = after;
  c.previous_realtime_shards = before;
  c.realtime_shards_since = since;
  c.realtime_shards_since_day = *ParseDate(since);
  return c;
}

std::string HourCode(const std::string& date, int hour) {
  return *YmdhFromUnix(*ParseDate(date) * kSecondsPerDay + hour * 3600);
}

TEST(RealtimeShardMapTest, WithoutAChangeEveryDayUsesTheOneCount) {
  ClusterConfig c;
  c.realtime_shards = 4;
  const RealtimeShardMap map(c);
  EXPECT_EQ(map.slots(), 4);
  EXPECT_FALSE(map.changing());
  for (int i = 0; i < 200; ++i) {
    const std::string key = fmt::format("u|k{}", i);
    EXPECT_EQ(map.ShardOfHour(key, HourCode("2012-03-25", i % 24)), ShardOf(key, 4));
    const auto shards = map.ShardsOfKey(key);
    ASSERT_EQ(shards.size, 1);
    EXPECT_EQ(shards.shard[0], static_cast<int>(ShardOf(key, 4)));
  }
}

TEST(RealtimeShardMapTest, TheHoursOfEachDayGoByThatDaysCount) {
  const RealtimeShardMap map(Changing(2, 3, "2026-12-01"));
  EXPECT_EQ(map.slots(), 3);
  EXPECT_TRUE(map.changing());
  EXPECT_EQ(map.CountForDay(*ParseDate("2026-11-30")), 2u);
  EXPECT_EQ(map.CountForDay(*ParseDate("2026-12-01")), 3u);
  int moved = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string key = fmt::format("u|k{}", i);
    // The last hour before the boundary and the first one after it.
    const uint32_t before = map.ShardOfHour(key, HourCode("2026-11-30", 23));
    const uint32_t after = map.ShardOfHour(key, HourCode("2026-12-01", 0));
    EXPECT_EQ(before, ShardOf(key, 2));
    EXPECT_EQ(after, ShardOf(key, 3));
    // A reader asks exactly the shards the key's records can be on.
    const auto shards = map.ShardsOfKey(key);
    const std::set<int> asked(shards.begin(), shards.end());
    EXPECT_EQ(asked, (std::set<int>{static_cast<int>(before), static_cast<int>(after)}));
    EXPECT_EQ(static_cast<size_t>(shards.size), asked.size());
    moved += before != after;
  }
  EXPECT_GT(moved, 0);
  // Years in another era of hour codes order the same way.
  EXPECT_EQ(map.ShardOfHour("u|k1", HourCode("1999-12-31", 5)), ShardOf("u|k1", 2));
  EXPECT_EQ(map.ShardOfHour("u|k1", HourCode("2040-01-01", 5)), ShardOf("u|k1", 3));
}

}  // namespace
}  // namespace clickatron
