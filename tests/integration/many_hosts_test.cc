// A cluster "on several hosts" on one machine: every member and the rebuild
// run in a mount namespace of their own in which every other member's
// directory is hidden under an empty tmpfs (ClusterSpec::private_hosts). A
// path one of them read or wrote of another would fail here as it would
// across machines; everything that crosses goes over HTTP: exports, late
// data, generations to the replicas, a replica catching up from its peer.
// After every step /clicks and /breakdown must equal an oracle computed from
// the raw increments.
#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "clickatron/file_util.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::many_hosts_test {
namespace {

using clickatron::testing::RunCommand;
using clickatron::testing::WaitFor;

const std::string kD0 = "2024-10-31";
const std::string kD1 = "2024-11-01";
const std::string kD2 = "2024-11-02";
const std::string kD3 = "2024-11-03";  // DST ends in New York this day
const std::vector<std::string> kKeys = {"jehiah", "hot", "cold", "https://example.com/x?y=1"};
const std::vector<std::string> kCountries = {"US", "JP", "DE", "BR"};

class ManyHostsTest : public ClusterDaysTest {
 protected:
  ManyHostsTest()
      : ClusterDaysTest({.replicas_per_archive_shard = 2, .private_hosts = true}, kKeys, UnixOfDate(kD3) + 86400 - 1) {}

  void SendIncrements(const std::vector<std::string>& days, int n, const std::vector<Oracle*>& oracles) {
    ClusterDaysTest::SendIncrements(days, n, oracles, kCountries, rng_);
  }




  // GET /manifest's data.generation of an archive replica (-1: no answer).
  int64_t Generation(const std::string& replica) {
    auto r = cluster_.hosts().Get(replica, "/manifest");
    if (r.status_code != 200) return -1;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_discarded() || !j["data"].is_object()) return -1;
    return j["data"].value("generation", int64_t{-1});
  }

  // Whether `path` can be listed on `host`.
  bool Visible(const std::string& host, const std::string& path) {
    std::string output;
    return RunCommand(cluster_.hosts().HostCommand(host, {"/bin/ls", path}), &output) == 0;
  }

  std::mt19937 rng_{20241101};
};

TEST_F(ManyHostsTest, ADayCycleWithLateDataAndAReplicaDownNeedsNoSharedPath) {
  const std::string api_data = cluster_.member("api-0").data_dir;
  const std::string replica_file = cluster_.member("archive-0a").file;
  ASSERT_NE(DirName(replica_file), DirName(cluster_.member("archive-0b").file));
  std::string error;
  ASSERT_TRUE(cluster_.StartAll(&error)) << error;
  // The hosts really are apart: each sees its own directory, not the others'.
  ASSERT_TRUE(MakeDirs(DirName(replica_file)).ok());
  EXPECT_TRUE(Visible("api-0", api_data));
  EXPECT_FALSE(Visible("rebuild", api_data));
  EXPECT_FALSE(Visible("archive-0b", DirName(replica_file)));
  EXPECT_TRUE(Visible("archive-0a", DirName(replica_file)));
  Rotate(kD1);
  Oracle visible, all;
  SendIncrements({kD0, kD1, kD2}, 400, {&visible, &all});
  ExpectQueriesMatch(visible, "increments on " + kD1);

  Rotate(kD2);
  SendIncrements({kD1, kD2}, 300, {&visible, &all});
  std::string output;
  ASSERT_EQ(cluster_.Rebuild(kD1, &output), 0) << output;
  ExpectQueriesMatch(visible, "rebuild of " + kD1);
  for (const char* replica : {"archive-0a", "archive-0b", "archive-1a", "archive-1b"}) {
    EXPECT_EQ(Generation(replica), 1) << replica;
  }

  // Late data for kD1 (its realtime day is sealed): acknowledged, kept by
  // the API node in its own directory, folded by the next night's run.
  SendIncrements({kD1}, 150, {&all});
  SendIncrements({kD2}, 150, {&visible, &all});
  ExpectQueriesMatch(visible, "late increments for " + kD1);

  // Next night, with one replica down: the others get generation 2, the run
  // fails, and realtime keeps kD2.
  Rotate(kD3);
  ASSERT_TRUE(cluster_.SealLateData(&error)) << error;
  ASSERT_EQ(cluster_.Stop("archive-1b"), 0);
  EXPECT_NE(cluster_.Rebuild(kD2, &output), 0) << output;
  EXPECT_NE(output.find("archive-1b"), std::string::npos) << output;
  EXPECT_EQ(Generation("archive-1a"), 2);
  ExpectQueriesMatch(all, "a deploy with archive-1b down");

  // Back, it catches up from archive-1a by itself; the rerun finishes.
  ASSERT_TRUE(cluster_.Start("archive-1b", &error)) << error;
  ASSERT_TRUE(WaitFor([&] { return Generation("archive-1b") == 2; }));
  ASSERT_EQ(cluster_.Rebuild(kD2, &output), 0) << output;
  ExpectQueriesMatch(all, "the rerun of " + kD2);
  for (int shard = 0; shard < 2; ++shard) {
    const std::string a = cluster_.member(fmt::format("archive-{}a", shard)).file;
    const std::string b = cluster_.member(fmt::format("archive-{}b", shard)).file;
    EXPECT_EQ(ReadFileToString(a).value(), ReadFileToString(b).value()) << "shard " << shard;
  }
  // The late file was marked done on the API node, in its own directory.
  std::string late;
  ASSERT_EQ(RunCommand(cluster_.hosts().HostCommand("api-0", {"/bin/ls", api_data + "/late"}), &late), 0);
  EXPECT_NE(late.find(".done"), std::string::npos) << late;
  EXPECT_EQ(late.find(".sealed"), std::string::npos) << late;
}

}  // namespace
}  // namespace clickatron::integration::many_hosts_test
