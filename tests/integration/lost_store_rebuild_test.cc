// Issue 53 §1, the sequence that once counted a whole day twice: day D is
// archived, deployed and marked exported; realtime-0's disk is lost and the
// operator restarts it empty (docs/operations.md); the API re-sends D's oplog
// lines to the empty shard; the next nightly run comes from a new rebuild
// host (a fresh work dir). Every key must still answer exactly what was
// acknowledged, and the empty shard must not take D's lines back.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "clickatron/http_client.h"
#include "integration/cluster_fixture.h"
#include "testutil/testutil.h"

namespace clickatron::integration {
namespace {

using clickatron::testing::HttpGet;
using clickatron::testing::WaitFor;

const std::string kLostD1 = "2024-05-01";
const std::string kLostD2 = "2024-05-02";
const std::string kLostD3 = "2024-05-03";
const std::vector<std::string> kLostKeys = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
const std::vector<std::string> kLostCountries = {"US", "JP", "DE"};

class LostStoreRebuildTest : public ClusterDaysTest {
 protected:
  LostStoreRebuildTest() : ClusterDaysTest({}, kLostKeys, UnixOfDate(kLostD2) + 86400 - 1) {}

  void Rebuild(const std::string& day) {
    std::string output;
    ASSERT_EQ(cluster_.Rebuild(day, &output), 0) << "rebuild " << day << ":\n" << output;
  }

  nlohmann::json Ring(const std::string& shard) {
    auto r = HttpGet(cluster_.member(shard).listen, "/ring");
    return nlohmann::json::parse(r.body, nullptr, false)["data"];
  }

  std::mt19937 rng_{53};
};

TEST_F(LostStoreRebuildTest, AWipedShardAndANewRebuildHostNeverFoldAnArchivedDayAgain) {
  std::string error;
  ASSERT_TRUE(cluster_.StartAll(&error)) << error;
  Rotate(kLostD1);
  Oracle all;
  SendIncrements({kLostD1}, 400, {&all}, kLostCountries, rng_);

  // The night: D1 is archived, deployed and marked exported on both shards.
  Rotate(kLostD2);
  Rebuild(kLostD1);
  ExpectQueriesMatch(all, "the rebuild of " + kLostD1);

  // realtime-0's disk is lost while the API is down; it comes back empty,
  // and is turned to the cluster's day (its Yesterday is D1 again).
  ASSERT_EQ(cluster_.Stop("api-0"), 0);
  ASSERT_EQ(cluster_.Stop("realtime-0"), 0);
  const std::string data_dir = cluster_.hosts().DataDir("realtime-0");
  std::filesystem::remove_all(data_dir);
  std::filesystem::create_directories(data_dir);
  ASSERT_TRUE(cluster_.Start("realtime-0", &error)) << error;
  Rotate(kLostD2);
  // It learned from the archive that D1 is held there: D1 is not open.
  nlohmann::json ring = Ring("realtime-0");
  EXPECT_EQ(ring["archived_through"], kLostD1) << ring.dump();
  for (const auto& day : ring["open_days"]) EXPECT_NE(day, kLostD1) << ring.dump();

  // The API comes back and re-sends what its oplog holds for the shard.
  ASSERT_TRUE(cluster_.Start("api-0", &error)) << error;
  SendIncrements({kLostD2}, 300, {&all}, kLostCountries, rng_);
  ExpectQueriesMatch(all, "the API's re-send to the wiped shard");

  // The next night runs on a new rebuild host: nothing of this work dir.
  const std::string work_dir = cluster_.config().rebuild.work_dir;
  std::filesystem::rename(work_dir, work_dir + ".old-host");
  Rotate(kLostD3);
  Rebuild(kLostD2);
  ExpectQueriesMatch(all, "the rebuild of " + kLostD2 + " from a new work dir");
  for (const auto& key : kLostKeys) {
    int64_t want = 0;
    for (const auto& [start, n] : all.Series("u", key, "day", 1, 0, UnixOfDate(kLostD1) + 86399)) want += n;
    EXPECT_EQ(cluster_.DayTotal(key, kLostD1), want) << key << " on " << kLostD1;
  }
  // No shard keeps D1 unexported (it would be retained forever).
  for (const char* shard : {"realtime-0", "realtime-1"}) {
    for (const auto& store : Ring(shard)["stores"]) {
      if (store["date"] <= kLostD1) {
        EXPECT_EQ(store["state"], "exported") << shard << ": " << store.dump();
      }
    }
  }
}

}  // namespace
}  // namespace clickatron::integration
