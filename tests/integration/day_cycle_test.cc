// A day's cycle end to end (issue 8): increments over three days through the
// API with a manual clock, rotation, export, rebuild, deploy, late data and
// clearing; after every step /clicks and /breakdown in several units and
// zones must equal an oracle computed here from the raw increments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "integration/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::integration::day_cycle_test {
namespace {

using clickatron::testing::HttpGet;

const std::string kD0 = "2024-03-08";  // yesterday at the start
const std::string kD1 = "2024-03-09";
const std::string kD2 = "2024-03-10";  // DST starts in New York this day
const std::string kD3 = "2024-03-11";
const std::vector<std::string> kKeys = {"jehiah", "hot", "https://example.com/a/long/link?with=query"};
const std::vector<std::string> kCountries = {"US", "JP", "DE", "BR", "IN"};
const std::vector<std::string> kReferrers = {"http://www.facebook.com/", "direct", "https://t.co/x"};

class DayCycleTest : public ClusterDaysTest {
 protected:
  // The end of kD2: windows reach back over every day with data. With the
  // API's archive answer cache on, as in production: each deploy changes the
  // generation under answers the API has kept, and every query after the
  // rebuild must read the new one. With three read loops: most increment
  // batches, the late-data seal and the rebuild's late-file downloads land
  // on a loop that hands them to the first, and queries are answered by
  // each loop's own readers and caches.
  DayCycleTest()
      : ClusterDaysTest({.read_cache_mb = 16, .read_loops = 3}, kKeys, UnixOfDate(kD2) + 86400 - 1) {}

  // Sends `n` random increments for hours of `days`, as batched POSTs;
  // every one must be acknowledged. Adds each to the given oracles.
  void SendIncrements(const std::vector<std::string>& days, int n, std::vector<Oracle*> oracles) {
    std::vector<Increment> increments;
    for (int i = 0; i < n; ++i) {
      Increment& inc = increments.emplace_back();
      inc.key = kKeys[rng_() % 10 < 6 ? 1 : rng_() % kKeys.size()];  // "hot" takes most
      const std::string& day = days[rng_() % days.size()];
      inc.ts = UnixOfDate(day) + static_cast<int64_t>(rng_() % 86400);
      inc.value = 1 + static_cast<int64_t>(rng_() % 3);
      inc.subs.emplace_back("c", kCountries[rng_() % kCountries.size()]);
      if (rng_() % 2) inc.subs.emplace_back("r", kReferrers[rng_() % kReferrers.size()]);
      for (Oracle* o : oracles) o->Add(inc);
    }
    ASSERT_EQ(PostIncrements(cluster_, increments), "");
  }




  void Rebuild(const std::string& day) {
    std::string output;
    int rc = cluster_.Rebuild(day, &output);
    ASSERT_EQ(rc, 0) << "rebuild " << day << " failed:\n" << output;
  }

  // The API's extra read loops running (threads named read-loop-N).
  int ReadLoopThreads() {
    const pid_t pid = cluster_.hosts().Pid("api-0");
    int n = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      if (std::getline(comm, name) && name.rfind("read-loop-", 0) == 0) ++n;
    }
    return n;
  }

  std::mt19937 rng_{20240309};
};

TEST_F(DayCycleTest, QueriesEqualTheOracleThroughRotationRebuildLateDataAndClear) {
  std::string error;
  ASSERT_TRUE(cluster_.StartAll(&error)) << error;
  EXPECT_EQ(ReadLoopThreads(), 2) << "read_loops = 3: the first loop and two more";
  Rotate(kD1);

  Oracle visible;  // what queries must show now
  Oracle all;      // every acknowledged increment

  // Day 1: increments for yesterday, today and tomorrow.
  SendIncrements({kD0, kD1, kD2}, 600, {&visible, &all});
  ExpectQueriesMatch(visible, "increments on " + kD1);

  // The day turns: kD0 leaves the ring unexported (kept, still read).
  Rotate(kD2);
  SendIncrements({kD1, kD2}, 400, {&visible, &all});
  ExpectQueriesMatch(visible, "rotation to " + kD2);

  // The nightly rebuild of kD1: afterwards kD1 is in the archive and still in
  // realtime Yesterday; each hour must be counted once.
  Rebuild(kD1);
  ExpectQueriesMatch(visible, "rebuild of " + kD1);

  // kD1 is sealed now: increments for it are late data, kept for the next
  // rebuild (acknowledged, not visible yet).
  SendIncrements({kD1}, 100, {&all});
  SendIncrements({kD2}, 100, {&visible, &all});
  ExpectQueriesMatch(visible, "late increments for " + kD1);

  // Next night: rotate, seal the late data, rebuild kD2.
  Rotate(kD3);
  ASSERT_TRUE(cluster_.SealLateData(&error)) << error;
  Rebuild(kD2);
  ExpectQueriesMatch(all, "rebuild of " + kD2 + " with late data");

  // Exported days are cleared from the ring; nothing older than yesterday stays.
  for (const char* shard : {"realtime-0", "realtime-1"}) {
    auto r = HttpGet(cluster_.member(shard).listen, "/ring");
    auto ring = nlohmann::json::parse(r.body)["data"];
    for (const auto& store : ring["stores"]) {
      std::string date = store["date"];
      EXPECT_GE(date, kD2) << shard << " still holds " << store.dump();
    }
  }
  ExpectQueriesMatch(all, "clearing");

  // A rerun of a finished night changes nothing.
  Rebuild(kD2);
  ExpectQueriesMatch(all, "rerun of " + kD2);

  // The answers above were read through the cache: the same keys' archive
  // parts were asked for by query after query.
  auto stats = nlohmann::json::parse(HttpGet(cluster_.api(), "/stats").body);
  EXPECT_GT(stats["data"]["read"]["archive_cache_hits"].get<int64_t>(), 0) << stats["data"]["read"].dump();
}

}  // namespace
}  // namespace clickatron::integration::day_cycle_test
