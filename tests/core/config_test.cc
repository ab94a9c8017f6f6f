#include "clickatron/config.h"

#include <gtest/gtest.h>

#include "clickatron/file_util.h"

namespace clickatron {
namespace {

const char* kGood = R"(
[cluster]
realtime_shards = 2
archive_shards = 1
clock = "manual"
[api]
flush_window_ms = 5
[[member]]
name = "api-0"
role = "api"
listen = "127.0.0.1:8080"
[[member]]
name = "realtime-0"
role = "realtime"
listen = "127.0.0.1:8090"
shard = 0
[[member]]
name = "realtime-1"
role = "realtime"
listen = "127.0.0.1:8091"
shard = 1
[[member]]
name = "archive-0a"
role = "archive"
listen = "127.0.0.1:8100"
shard = 0
[[member]]
name = "archive-0b"
role = "archive"
listen = "127.0.0.1:8101"
shard = 0
)";

TEST(ConfigTest, ParsesMembersAndSections) {
  auto c = ClusterConfig::Parse(kGood, "good.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->realtime_shards, 2);
  EXPECT_TRUE(c->manual_clock());
  EXPECT_EQ(c->api.flush_window_ms, 5);
  EXPECT_EQ(c->api.oplog_sync, "always");  // default
  ASSERT_NE(c->RealtimeMember(1), nullptr);
  EXPECT_EQ(c->RealtimeMember(1)->listen.port, 8091);
  EXPECT_EQ(c->ArchiveReplicas(0).size(), 2u);
  EXPECT_EQ(c->FindMember("api-0")->data_dir, "var/api-0");  // default data dir
  EXPECT_EQ(c->ArchiveReplicas(0)[0]->file, "var/archive/shard-0.csv");
}

Status ParseError(const std::string& text) { return ClusterConfig::Parse(text, "bad.toml").status(); }

TEST(ConfigTest, ErrorsNameLineAndField) {
  std::string bad = kGood;
  bad.replace(bad.find("flush_window_ms = 5"), 19, "flush_window_ms = \"x\"");
  Status st = ParseError(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("line 7"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("flush_window_ms"), std::string::npos) << st.message();
}

TEST(ConfigTest, RejectsUnknownFieldsAndBadValues) {
  EXPECT_NE(ParseError(std::string(kGood) + "\n[api]\n").message().find("line"), std::string::npos);
  std::string misspelt = kGood;
  misspelt.replace(misspelt.find("flush_window_ms"), 15, "flush_windw_ms");
  EXPECT_NE(ParseError(misspelt).message().find("unknown field"), std::string::npos);
  std::string clock = kGood;
  clock.replace(clock.find("\"manual\""), 8, "\"sundial\"");
  EXPECT_NE(ParseError(clock).message().find("clock"), std::string::npos);
  std::string syntax = kGood;
  syntax += "\n[[member]\n";
  EXPECT_NE(ParseError(syntax).message().find("line"), std::string::npos);
}

TEST(ConfigTest, RejectsInconsistentShards) {
  std::string missing = kGood;
  missing.replace(missing.find("shard = 1"), 9, "shard = 0");
  EXPECT_FALSE(ParseError(missing).ok());  // shard 0 twice, shard 1 missing
  std::string outside = kGood;
  outside.replace(outside.find("realtime_shards = 2"), 19, "realtime_shards = 1");
  Status st = ParseError(outside);
  EXPECT_NE(st.message().find("shard 1"), std::string::npos) << st.message();
}

TEST(ConfigTest, RejectsDuplicateNamesAndAddresses) {
  std::string dup = kGood;
  dup.replace(dup.find("name = \"realtime-1\""), 19, "name = \"realtime-0\"");
  EXPECT_NE(ParseError(dup).message().find("duplicate member"), std::string::npos);
  std::string addr = kGood;
  addr.replace(addr.find("127.0.0.1:8091"), 14, "127.0.0.1:8090");
  EXPECT_NE(ParseError(addr).message().find("used twice"), std::string::npos);
}

TEST(ConfigTest, ShippedLocalConfigLoads) {
  auto c = ClusterConfig::Load(std::string(CLICKATRON_SOURCE_DIR) + "/conf/local.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->MembersWithRole(MemberRole::kRealtime).size(), 2u);
  EXPECT_EQ(c->MembersWithRole(MemberRole::kArchive).size(), 2u);
  EXPECT_EQ(c->MembersWithRole(MemberRole::kApi).size(), 1u);
}

TEST(HostPortTest, ParsesAndRejects) {
  auto hp = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->port, 8080);
  EXPECT_FALSE(ParseHostPort("127.0.0.1").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:70000").ok());
  EXPECT_FALSE(ParseHostPort("h:12x").ok());
}

}  // namespace
}  // namespace clickatron
