// The test cluster harness (tests/testutil/cluster.h) itself: the file a
// spec describes is what the daemons' own parser reads back, and a member
// it starts answers /ping on its reserved port and stops by PID. Also the
// file helpers of testutil.h: a file they cannot read or write fails the test.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <set>

#include "clickatron/file_util.h"
#include "testutil/cluster.h"
#include "testutil/testutil.h"

namespace clickatron {
namespace {

using testing::Cluster;
using testing::ClusterSpec;
using testing::HttpGet;

TEST(ClusterHarnessTest, TheSpecsFileParsesWithTheRealParser) {
  ClusterSpec spec;
  spec.realtime_shards = 2;
  spec.archive_shards = 2;
  spec.archive_replicas = 2;
  spec.api_nodes = 2;
  spec.loaders = {"loader"};
  spec.cluster.SetString("clock", "manual").SetString("admin_token", "a \"quoted\" admin token");
  spec.api.SetInt("request_timeout_ms", 1234);
  spec.archive.SetString("field_separator", "\t");
  spec.members["archive-1b"].file = "/elsewhere/shard-1.csv";
  Cluster cluster(spec);

  // Read back from the file on disk, by ClusterConfig::Load (the daemons' way).
  auto loaded = ClusterConfig::Load(cluster.config_path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const ClusterConfig& c = *loaded;
  EXPECT_EQ(c.realtime_shards, 2);
  EXPECT_EQ(c.archive_shards, 2);
  EXPECT_TRUE(c.manual_clock());
  EXPECT_EQ(c.admin_token, "a \"quoted\" admin token");
  EXPECT_EQ(c.api.request_timeout_ms, 1234);
  EXPECT_EQ(c.archive.field_separator, "\t");
  EXPECT_EQ(c.cluster_secret, testing::kTestClusterSecret);
  EXPECT_EQ(c.rebuild.work_dir, cluster / "rebuild");
  EXPECT_EQ(c.rebuild.backup_dir, cluster / "backup");

  std::vector<std::string> names;
  for (const MemberConfig& m : c.members) names.push_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"api-0", "api-1", "loader", "realtime-0", "realtime-1", "archive-0a",
                                             "archive-0b", "archive-1a", "archive-1b"}));
  std::set<uint16_t> ports;
  for (const MemberConfig& m : c.members) {
    EXPECT_EQ(m.data_dir, cluster.DataDir(m.name));
    if (m.name == "loader") {
      EXPECT_EQ(m.listen.host, "127.255.0.1");  // never started
      continue;
    }
    EXPECT_EQ(m.listen.host, "127.0.0.1") << m.name;
    EXPECT_TRUE(ports.insert(m.listen.port).second) << m.name << " shares port " << m.listen.port;
    EXPECT_EQ(cluster.Address(m.name).port, m.listen.port);
  }
  EXPECT_EQ(c.ArchiveReplicas(1).front()->name, cluster.ArchiveName(1, 0));
  EXPECT_EQ(c.ArchiveReplicas(1).front()->file, cluster.ArchiveFile(1));
  EXPECT_EQ(c.FindMember("archive-1b")->file, "/elsewhere/shard-1.csv");
  EXPECT_EQ(c.RealtimeMember(1)->shard, 1);

  // A rewrite keeps every member's port.
  spec.api.SetInt("request_timeout_ms", 99);
  ASSERT_TRUE(cluster.Write(spec).ok());
  EXPECT_EQ(cluster.config().api.request_timeout_ms, 99);
  for (const MemberConfig& m : c.members) {
    if (m.name == "loader") continue;
    EXPECT_EQ(cluster.Address(m.name).port, m.listen.port) << m.name;
  }
}

TEST(ClusterHarnessTest, AStartedMemberAnswersPingAndStopsByPid) {
  ClusterSpec spec;
  spec.cluster.SetString("clock", "manual");
  Cluster cluster(spec);
  std::string error;
  ASSERT_TRUE(cluster.Start("realtime-0", &error)) << error;
  EXPECT_TRUE(cluster.Running("realtime-0"));
  EXPECT_GT(cluster.Pid("realtime-0"), 0);
  EXPECT_EQ(HttpGet(cluster.Address("realtime-0"), "/ping").status_code, 200);
  EXPECT_TRUE(FileExists(cluster.LogPath("realtime-0")));

  EXPECT_EQ(cluster.Stop("realtime-0"), 0) << cluster.LogTail("realtime-0");
  EXPECT_FALSE(cluster.Running("realtime-0"));
  EXPECT_EQ(cluster.Pid("realtime-0"), -1);
  EXPECT_FALSE(HttpGet(cluster.Address("realtime-0"), "/ping", 1000).ok());

  // Restarted on the same port; SIGKILL ends it.
  ASSERT_TRUE(cluster.Start("realtime-0", &error)) << error;
  EXPECT_EQ(cluster.Get("realtime-0", "/ping").status_code, 200);
  cluster.Kill("realtime-0");
  EXPECT_FALSE(cluster.Running("realtime-0"));
  EXPECT_FALSE(HttpGet(cluster.Address("realtime-0"), "/ping", 1000).ok());

  EXPECT_FALSE(cluster.Start("no-such-member", &error));
}

TEST(TestFileHelpers, ReadAllAndWriteAllFailTheTestOnAFileTheyCannotUse) {
  testing::TempDir tmp;
  testing::WriteAll(tmp / "a", "bytes");
  EXPECT_EQ(testing::ReadAll(tmp / "a"), "bytes");
  EXPECT_NONFATAL_FAILURE(EXPECT_EQ(testing::ReadAll(tmp / "missing"), ""), "ReadAll");
  EXPECT_NONFATAL_FAILURE(testing::WriteAll(tmp / "no-such-dir/b", "bytes"), "WriteAll");
}

}  // namespace
}  // namespace clickatron
