// Sharding: zlib crc32 and the shard key of every record shape.
//
// Known answers computed with python3 when this test was written:
//   zlib.crc32(b"u|jehiah") == 3573330444, and `% n` for the shard numbers.
#include "clickatron/shard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "clickatron/key_codec.h"
#include "clickatron/record.h"

namespace clickatron {
namespace {

TEST(Crc32, KnownAnswers) {
  EXPECT_EQ(Crc32(""), 0u);
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(Crc32("u|jehiah"), 3573330444u);
  EXPECT_EQ(Crc32("c|US"), 1620230042u);
  EXPECT_EQ(Crc32("u|h0aMB8AuNw4="), 1153486218u);
  EXPECT_EQ(Crc32("h0aMB8AuNw4="), 2687265397u);
}

TEST(Crc32, ExtendEqualsWhole) {
  EXPECT_EQ(Crc32Extend(Crc32("u|"), "jehiah"), Crc32("u|jehiah"));
  EXPECT_EQ(Crc32Extend(Crc32("u|jehiah"), ""), Crc32("u|jehiah"));
}

TEST(ShardOf, KnownAnswers) {
  // python3: [zlib.crc32(b"u|jehiah") % n for n in (1,2,3,7,10,16,1000)]
  EXPECT_EQ(ShardOf("u|jehiah", 1), 0u);
  EXPECT_EQ(ShardOf("u|jehiah", 2), 0u);
  EXPECT_EQ(ShardOf("u|jehiah", 3), 0u);
  EXPECT_EQ(ShardOf("u|jehiah", 7), 5u);
  EXPECT_EQ(ShardOf("u|jehiah", 10), 4u);
  EXPECT_EQ(ShardOf("u|jehiah", 16), 12u);
  EXPECT_EQ(ShardOf("u|jehiah", 1000), 444u);
  // ... and for b"h0aMB8AuNw4=" (a lookup's shard key is its hash).
  EXPECT_EQ(ShardOf("h0aMB8AuNw4=", 2), 1u);
  EXPECT_EQ(ShardOf("h0aMB8AuNw4=", 7), 5u);
  EXPECT_EQ(ShardOf("h0aMB8AuNw4=", 1000), 397u);
  EXPECT_EQ(ShardOf("123456789", 3), 2u);
  EXPECT_EQ(ShardOf("u|jehiah", 0), 0u);  // misconfiguration: no division by zero
}

std::string RealtimeShardKey(std::string_view key) {
  Result<std::string_view> r = ShardKeyOfRealtimeKey(key);
  EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  return r.ok() ? std::string(*r) : "<error>";
}

std::string ArchiveShardKey(std::string_view key) {
  Result<std::string_view> r = ShardKeyOfArchiveKey(key);
  EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  return r.ok() ? std::string(*r) : "<error>";
}

TEST(ShardKey, RealtimeKeysAndLines) {
  EXPECT_EQ(RealtimeShardKey("u|jehiah.c41l"), "u|jehiah");
  EXPECT_EQ(RealtimeShardKey("u|jehiah.c41l,5"), "u|jehiah");
  EXPECT_EQ(RealtimeShardKey("c.u|jehiah.US.c41l"), "u|jehiah");
  EXPECT_EQ(RealtimeShardKey("r.u|jehiah.h0aMB8AuNw4=.c41l,2"), "u|jehiah");
  EXPECT_EQ(RealtimeShardKey("l|h0aMB8AuNw4="), "h0aMB8AuNw4=");
  EXPECT_EQ(RealtimeShardKey("l|h0aMB8AuNw4=,http://www.facebook.com/"), "h0aMB8AuNw4=");
}

TEST(ShardKey, ArchiveKeysAndLines) {
  EXPECT_EQ(ArchiveShardKey("u|jehiah"), "u|jehiah");
  EXPECT_EQ(ArchiveShardKey("u|jehiah,c413:2 c41l:5"), "u|jehiah");
  EXPECT_EQ(ArchiveShardKey("c.u|jehiah.c41l"), "u|jehiah");
  EXPECT_EQ(ArchiveShardKey("r.u|jehiah.c41l,5bmehgOB4+w=:3 h0aMB8AuNw4=:2"), "u|jehiah");
  EXPECT_EQ(ArchiveShardKey("l|h0aMB8AuNw4=,http://www.facebook.com/"), "h0aMB8AuNw4=");
}

TEST(ShardKey, RejectsMalformedKeys) {
  for (std::string_view bad : {"", "u|jehiah", "u|jeh iah.c41l", "c.u|jehiah.c41l", "l|nohash",
                               "u|jehiah.c41w,5"}) {
    EXPECT_FALSE(ShardKeyOfRealtimeKey(bad).ok()) << bad;
  }
  for (std::string_view bad : {"", "u|jehiah.c41l", "c.u|jehiah.US.c41l", "l|nohash", "u",
                               "c.u|jehiah.c41w,US:4"}) {
    EXPECT_FALSE(ShardKeyOfArchiveKey(bad).ok()) << bad;
  }
}

TEST(ShardProperty, AllRecordsOfOneKeyShareAShard) {
  // Everything a query for ns|tkey needs must sit on one shard: every hour,
  // every subtotal namespace, in both formats.
  std::mt19937 rng(42);
  const char* hours[] = {"c413", "c41l", "c3p1", "0110", "vcvn"};
  for (int i = 0; i < 300; ++i) {
    const std::string_view letters = "abcdefghijkmnopqrstuvwxyz";  // no "l": reserved
    const std::string ns(1, letters[rng() % letters.size()]);
    const std::string tkey = StoreKeyPart("key-" + std::to_string(rng())).stored;
    const uint32_t count = 1 + rng() % 64;
    const uint32_t expect = Crc32(ns + "|" + tkey) % count;
    for (const char* hour : hours) {
      ASSERT_EQ(ShardOf(RealtimeShardKey(fmt::format("{}|{}.{},1", ns, tkey, hour)), count), expect);
      ASSERT_EQ(ShardOf(RealtimeShardKey(fmt::format("c.{}|{}.US.{},1", ns, tkey, hour)), count),
                expect);
      ASSERT_EQ(ShardOf(ArchiveShardKey(fmt::format("r.{}|{}.{},x:1", ns, tkey, hour)), count),
                expect);
    }
    ASSERT_EQ(ShardOf(ArchiveShardKey(fmt::format("{}|{},c41l:1", ns, tkey)), count), expect);
  }
}

}  // namespace
}  // namespace clickatron
