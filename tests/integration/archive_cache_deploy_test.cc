// Kept archive answers across a deploy (docs/protocols.md, "What realtime
// hands over"): a rebuild that folds a retained day tells realtime it is
// exported, and realtime clears a retained day at once. A query that added
// a kept answer of the generation before (which ends at an older last day)
// to realtime's days would then miss that day entirely. Nothing waits for
// the API nodes: realtime's read answers say which day it has handed over
// and which generation is deployed, and the API uses no kept answer of an
// older file from then on, so a query sent the moment the rebuild returns
// is exact: compared once, without waiting for it to become so.
#include <gtest/gtest.h>

#include <random>

#include "integration/cluster_fixture.h"

namespace clickatron::integration {
namespace {

using clickatron::testing::HttpGet;

const std::string kD0 = "2024-05-01";
const std::string kD1 = "2024-05-02";  // left unexported: retained, then folded and cleared at once
const std::string kD2 = "2024-05-03";
const std::string kD3 = "2024-05-04";

class ArchiveCacheDeployTest : public ClusterDaysTest {
 protected:
  ArchiveCacheDeployTest()
      : ClusterDaysTest({.read_cache_mb = 16}, {"hot", "other"},
                        UnixOfDate(kD3) + 86400 - 1) {}

  void Rebuild(const std::string& day) {
    std::string output;
    ASSERT_EQ(cluster_.Rebuild(day, &output), 0) << "rebuild " << day << " failed:\n" << output;
  }

  int64_t ReadFigure(const std::string& name) {
    auto stats = nlohmann::json::parse(HttpGet(cluster_.api(), "/stats").body);
    return stats["data"]["read"][name].get<int64_t>();
  }
};

TEST_F(ArchiveCacheDeployTest, AQueryTheMomentTheRebuildReturnsCountsTheRetainedDayItCleared) {
  std::string error;
  ASSERT_TRUE(cluster_.StartAll(&error)) << error;
  std::mt19937 rng(5);
  Oracle all;
  Rotate(kD1);
  SendIncrements({kD0, kD1}, 300, {&all}, {"US", "JP", "DE"}, rng);
  ExpectQueriesMatch(all, "increments");
  Rebuild(kD0);  // generation 1: last day kD0
  ExpectQueriesMatch(all, "rebuild of " + kD0);

  // kD1 leaves the ring's positions unexported: a retained day.
  Rotate(kD2);
  Rotate(kD3);
  // Answers of generation 1 kept, and read again.
  const int64_t hits_before = ReadFigure("archive_cache_hits");
  ASSERT_EQ(CompareQueries(cluster_, all, keys_, reference_ts_), "");
  ASSERT_GT(ReadFigure("archive_cache_hits"), hits_before) << "the queries did not read kept answers";

  // Generation 2 (last day kD2) folds kD1, and realtime clears kD1 at once.
  // The API has asked no replica since; its kept answers of generation 1 lack
  // kD1, and only realtime's answers can tell it so.
  Rebuild(kD2);
  for (const MemberConfig* shard : cluster_.config().MembersWithRole(MemberRole::kRealtime)) {
    auto ring = nlohmann::json::parse(HttpGet(shard->listen, "/ring").body)["data"];
    for (const auto& store : ring["stores"]) {
      ASSERT_NE(store["date"].get<std::string>(), kD1) << shard->name << " still holds " << kD1;
    }
  }
  const int64_t misses_before = ReadFigure("archive_cache_misses");
  EXPECT_EQ(CompareQueries(cluster_, all, keys_, reference_ts_), "") << "right after the rebuild of " << kD2;
  EXPECT_GT(ReadFigure("archive_cache_misses"), misses_before) << "generation 2 was read from the replicas";
}

}  // namespace
}  // namespace clickatron::integration
