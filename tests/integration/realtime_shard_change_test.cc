// A realtime shard added at a day boundary: [cluster] realtime_shards = 3
// with realtime_shards_since = D2 and previous_realtime_shards = 2. Every
// increment goes to its key's shard under the count of its own day, readers
// ask both candidate shards of a key, and the rebuild exports every shard
// (the new one only from the days it holds). /clicks and /breakdown equal an
// oracle of the raw increments before the change, after it, and after each
// nightly run. Every member and the rebuild run on a "host" of their own
// (ClusterSpec::private_hosts).
#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "clickatron/key_codec.h"
#include "clickatron/shard.h"
#include "clickatron/ymdh.h"
#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::realtime_shard_change_test {
namespace {


const std::string kD0 = "2024-06-09";
const std::string kD1 = "2024-06-10";
const std::string kD2 = "2024-06-11";  // the first day of three realtime shards
const std::string kD3 = "2024-06-12";

// Plain keys, and keys that are stored hashed (so their records and the
// lookups naming them route like any other key).
std::vector<std::string> Keys() {
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(fmt::format("key{}", i));
  for (int i = 0; i < 3; ++i) keys.push_back(fmt::format("https://example.com/p{}?q=1", i));
  return keys;
}
// Subtotal values; the last is stored hashed: a breakdown shows it only by
// finding its lookup record, on whichever shard the day's count sent it to.
const std::vector<std::string> kSubValues = {"US", "JP", "https://t.co/a.b", "https://t.co/c.d", "https://t.co/e.f"};

class RealtimeShardChangeTest : public ClusterDaysTest {
 protected:
  // Each member (and the rebuild) on a "host" of its own, as in
  // many_hosts_test.cc: the new shard is reached over HTTP only.
  RealtimeShardChangeTest() : ClusterDaysTest({.private_hosts = true}, Keys(), UnixOfDate(kD3) + 86400 - 1) {}

  void SendIncrements(const std::vector<std::string>& days, int n, Oracle* oracle) {
    ClusterDaysTest::SendIncrements(days, n, {oracle}, kSubValues, rng_);
  }

  // The hours (as UTC days) of the total records realtime member `name` holds.
  std::set<std::string> DaysHeldBy(const std::string& name) {
    std::set<std::string> days;
    auto r = cluster_.hosts().Get(name, "/fwmatch?key=u%7C");
    EXPECT_TRUE(r.status_code == 200 || r.status_code == 404) << r.status_code << " " << r.body;
    size_t start = 0;
    while (start < r.body.size()) {
      const size_t nl = r.body.find('\n', start);
      const std::string line = r.body.substr(start, nl - start);
      start = nl == std::string::npos ? r.body.size() : nl + 1;
      const std::string key = line.substr(0, line.find(','));
      auto unix = UnixFromYmdh(key.substr(key.rfind('.') + 1));
      if (unix.ok()) days.insert(FormatDate(FloorDiv(*unix, kSecondsPerDay)));
    }
    return days;
  }

  std::mt19937 rng_{20240611};
};

TEST_F(RealtimeShardChangeTest, AShardAddedAtADayBoundaryTakesThatDaysIncrementsAndReadsStayExact) {
  // Some hashed value's lookup record moves shard with the count (else the
  // reads of lookups from both shards would not be tested).
  int moved = 0;
  for (const std::string& value : kSubValues) {
    const StoredKeyPart stored = StoreKeyPart(value);
    if (stored.hashed) moved += ShardOf(stored.stored, 2) != ShardOf(stored.stored, 3);
  }
  ASSERT_GT(moved, 0);
  std::string error;
  ASSERT_TRUE(cluster_.StartAll(&error)) << error;
  Rotate(kD1);
  Oracle oracle;
  SendIncrements({kD0, kD1, kD2}, 300, &oracle);  // kD2 under two shards: made before the change
  ExpectQueriesMatch(oracle, "increments under two shards");

  // The change, during kD1: a third realtime member, and realtime_shards = 3
  // from kD2 on. The new member starts, then the API node restarts with the file.
  testing::ClusterSpec spec = cluster_.hosts().spec();
  spec.realtime_shards = 3;
  spec.cluster.SetString("realtime_shards_since", kD2).SetInt("previous_realtime_shards", 2);
  const Status written = cluster_.hosts().Write(spec);
  ASSERT_TRUE(written.ok()) << written.ToString();
  ASSERT_TRUE(cluster_.Start("realtime-2", &error)) << error;
  Rotate(kD1);
  ASSERT_EQ(cluster_.Stop("api-0"), 0);
  ASSERT_TRUE(cluster_.Start("api-0", &error)) << error;
  ExpectQueriesMatch(oracle, "the change (nothing on the new shard yet)");

  SendIncrements({kD1, kD2}, 400, &oracle);
  ExpectQueriesMatch(oracle, "increments on both sides of the boundary");
  // The new shard holds kD2's increments of its keys, and nothing of kD1.
  EXPECT_EQ(DaysHeldBy("realtime-2"), std::set<std::string>{kD2});
  // Under the old count the same keys' kD1 hours stay on shards 0 and 1.
  std::set<std::string> old_days = DaysHeldBy("realtime-0");
  for (const std::string& day : DaysHeldBy("realtime-1")) old_days.insert(day);
  EXPECT_TRUE(old_days.count(kD1) > 0);

  // kD1 is folded from the two shards it was counted on (the new one holds
  // it empty), kD2 from all three.
  Rotate(kD2);
  std::string output;
  ASSERT_EQ(cluster_.Rebuild(kD1, &output), 0) << output;
  ExpectQueriesMatch(oracle, "the rebuild of " + kD1);
  Rotate(kD3);
  ASSERT_EQ(cluster_.Rebuild(kD2, &output), 0) << output;
  EXPECT_NE(output.find("from realtime shard 2"), std::string::npos) << output;
  ExpectQueriesMatch(oracle, "the rebuild of " + kD2);
}

}  // namespace
}  // namespace clickatron::integration::realtime_shard_change_test
