// Expansion of an increment into records and their shards. Expected keys come
// from the record formats in docs/protocols.md, expected shards from zlib's crc32 computed here.
#include <gtest/gtest.h>

#include "clickatron/unique_sketch.h"
#include <openssl/evp.h>
#include <zlib.h>

#include <map>
#include <string>
#include <vector>

#include "clickatron/query_string.h"
#include "ingest/increment_parser.h"
#include "ingest/increment_records.h"

namespace clickatron::api {
namespace {

uint32_t ExpectedShard(const std::string& shard_key, uint32_t n) {
  return static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(shard_key.data()), shard_key.size())) % n;
}

Increment ParseOne(const std::string& query) {
  QueryArgs args;
  EXPECT_TRUE(ParseQueryString(query, &args).ok());
  IncrementLimits limits;
  limits.now = 1333249200;
  HourCache cache;
  Increment inc;
  Status st = ParseIncrement(args, limits, &cache, &inc);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return inc;
}

TEST(WriteRoutingTest, TotalAndSubtotalsShareTheKeysShard) {
  for (uint32_t shards : {1u, 2u, 3u, 7u}) {
    Increment inc = ParseOne("ns=u&key=jehiah&ts=1333249200&value=4&sub=c:US&sub=b:chrome");
    std::vector<RoutedRecord> out;
    ExpandIncrement(inc, shards, &out);
    ASSERT_EQ(out.size(), 3u);
    const uint32_t expected = ExpectedShard("u|jehiah", shards);
    std::map<std::string, int64_t> got;
    for (const RoutedRecord& r : out) {
      EXPECT_FALSE(r.lookup);
      EXPECT_EQ(r.shard, expected) << r.key;
      got[r.key] = r.delta;
    }
    std::map<std::string, int64_t> want = {{"u|jehiah.c413", 4}, {"c.u|jehiah.US.c413", 4}, {"b.u|jehiah.chrome.c413", 4}};
    EXPECT_EQ(got, want);
  }
}

TEST(WriteRoutingTest, HashedPartsAddLookupsRoutedByTheirHash) {
  const std::string url = "http://www.facebook.com/";
  const std::string long_key = "a key with spaces";
  Increment inc = ParseOne("ns=u&key=a%20key%20with%20spaces&sub=r:http%3A%2F%2Fwww.facebook.com%2F&sub=c:US");
  // Hash12 computed here: base64 of the first 8 bytes of MD5.
  auto hash12 = [](const std::string& v) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    EVP_Digest(v.data(), v.size(), md, &md_len, EVP_md5(), nullptr);
    unsigned char b64[16];
    EVP_EncodeBlock(b64, md, 8);
    return std::string(reinterpret_cast<char*>(b64), 12);
  };
  const std::string key_hash = hash12(long_key);
  ASSERT_EQ(hash12(url), "h0aMB8AuNw4=");  // the seed's example
  std::vector<RoutedRecord> out;
  ExpandIncrement(inc, 5, &out);
  std::map<std::string, RoutedRecord> by_key;
  for (RoutedRecord& r : out) by_key[(r.lookup ? "L:" : "C:") + r.key] = r;
  ASSERT_EQ(by_key.size(), 5u);
  const uint32_t counter_shard = ExpectedShard("u|" + key_hash, 5);
  EXPECT_EQ(by_key.at("C:u|" + key_hash + ".c413").shard, counter_shard);
  EXPECT_EQ(by_key.at("C:r.u|" + key_hash + ".h0aMB8AuNw4=.c413").shard, counter_shard);
  EXPECT_EQ(by_key.at("C:c.u|" + key_hash + ".US.c413").shard, counter_shard);
  const RoutedRecord& key_lookup = by_key.at("L:" + key_hash);
  EXPECT_EQ(key_lookup.lookup_value, long_key);
  EXPECT_EQ(key_lookup.shard, ExpectedShard(key_hash, 5));
  const RoutedRecord& url_lookup = by_key.at("L:h0aMB8AuNw4=");
  EXPECT_EQ(url_lookup.lookup_value, url);
  EXPECT_EQ(url_lookup.shard, ExpectedShard("h0aMB8AuNw4=", 5));
}

TEST(WriteRoutingTest, AVisitorRidesOnTheTotalAndEverySubtotal) {
  std::vector<RoutedRecord> out;
  ExpandIncrement(ParseOne("ns=u&key=jehiah&sub=c:US&sub=r:direct&uniq=visitor%2042"), 3, &out);
  ASSERT_EQ(out.size(), 3u);  // no record of its own: the Combiner writes "~key" beside each counter
  for (const RoutedRecord& r : out) {
    EXPECT_TRUE(r.has_visitor) << r.key;
    EXPECT_EQ(r.visitor, HashVisitor("visitor 42")) << r.key;
  }
  out.clear();
  ExpandIncrement(ParseOne("ns=u&key=jehiah&sub=c:US"), 3, &out);
  for (const RoutedRecord& r : out) EXPECT_FALSE(r.has_visitor) << r.key;
}

TEST(WriteRoutingTest, KeysSpreadOverAllShards) {
  std::vector<int> per_shard(4, 0);
  for (int i = 0; i < 400; ++i) {
    std::vector<RoutedRecord> out;
    ExpandIncrement(ParseOne("ns=u&key=k" + std::to_string(i)), 4, &out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shard, ExpectedShard("u|k" + std::to_string(i), 4));
    per_shard[out[0].shard]++;
  }
  for (int n : per_shard) EXPECT_GT(n, 50);
}

}  // namespace
}  // namespace clickatron::api
