// Realtime reads skip the days the archive holds (after=D, D = the newest
// last day archive answers have shown): the overlap day, Yesterday, is in
// both until midnight after its rebuild, and readers ignore its realtime copy
// anyway. A query whose archive answer ends at an earlier day (here: an
// operator rolls the archive back to the generation before) must not lose
// that day: it reads realtime again, every day. Real daemons; the expected
// answers come from the dataset's oracle.
#include <gtest/gtest.h>

#include <csignal>
#include <random>

#include "api/query/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_realtime_skip_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;

class IntegrationRealtimeSkipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.WriteConfig();
    today_ = TestRingToday();
    std::mt19937_64 rng(13);
    // The same clicks, stored two ways: as the ring holds them after the
    // rebuild of D-1 (archive through D-1, realtime D-1 and D), and as they
    // were before it (archive through D-2, realtime D-1 and D).
    for (int64_t h = (today_ - 10) * kDay; h < (today_ + 1) * kDay; h += kHour) {
      if (rng() % 4 == 0) continue;
      const int64_t value = 1 + static_cast<int64_t>(rng() % 9);
      const std::vector<ReadDataset::Sub> subs = {{"c", rng() % 2 ? "US" : "JP"}};
      after_rebuild_.AddAtRing("u", "skip", h, value, subs, today_);
      const int64_t day = FloorDiv(h, kDay);
      before_rebuild_.Add("u", "skip", h, value, subs, day <= today_ - 2, day >= today_ - 1);
    }
    ref_ = today_ * kDay + 20 * kHour;
  }

  // Series (day and hour units, two offsets) and breakdown of the key, each
  // compared with the oracle; "" or the first difference.
  std::string QueriesCorrect() {
    for (const auto& [unit, units] : {std::pair<std::string, int>{"day", 6}, {"hour", 72}}) {
      for (int offset : {0, -5}) {
        const std::string target = fmt::format("/clicks?ns=u&key=skip&unit={}&units={}&hour_offset={}&unit_reference_ts={}",
                                               unit, units, offset, ref_);
        auto got = cluster_.Api(target);
        const auto want = ExpectedSeries(oracle::Rollup(unit, offset, ref_, units, after_rebuild_.Hours("u", "skip")));
        if (got["http_status"] != 200 || got["data"]["clicks"] != want) return target + " → " + got.dump();
      }
    }
    std::map<std::string, int64_t> sums;
    for (const auto& [value, hours] : after_rebuild_.SubHours("c", "u", "skip")) {
      for (const auto& u : oracle::Rollup("day", 0, ref_, 6, hours)) sums[value] += u.clicks;
    }
    const std::string target = fmt::format("/breakdown?sns=c&ns=u&key=skip&unit=day&units=6&unit_reference_ts={}", ref_);
    auto got = cluster_.Api(target);
    if (got["http_status"] != 200 || got["data"]["breakdown"] != ExpectedTop(sums, 100)) {
      return target + " → " + got.dump();
    }
    return "";
  }

  ReadCluster cluster_{ReadCluster::Spec{.realtime_shards = 1, .archive_shards = 1, .replicas = 1}};
  ReadDataset after_rebuild_, before_rebuild_;
  int64_t today_ = 0;
  int64_t ref_ = 0;
};

TEST_F(IntegrationRealtimeSkipTest, AnArchiveRolledBackADayStillGetsThatDayFromRealtime) {
  cluster_.StartWithData(after_rebuild_, today_, 2);  // archive through D-1
  // Twice: the first answers show last day D-1, and later reads skip it.
  ASSERT_EQ(QueriesCorrect(), "");
  ASSERT_EQ(QueriesCorrect(), "");
  EXPECT_EQ(cluster_.ReadFigure("realtime_skip_rereads"), 0);

  // The operator puts the generation before back: through D-2 only. D-1 now
  // counts from realtime, which API reads have been skipping.
  cluster_.WriteArchives(before_rebuild_, 1, FormatDate(today_ - 2));
  ASSERT_EQ(::kill(cluster_.Daemon(cluster_.ArchiveMember(0, 0)).pid(), SIGHUP), 0);
  ASSERT_TRUE(clickatron::testing::WaitFor(
      [&] {
        auto r = clickatron::testing::HttpGet(cluster_.Peer(cluster_.ArchiveMember(0, 0)), "/manifest?shard=0", 2000);
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        return r.status_code == 200 && !j.is_discarded() && j["data"].is_object() && j["data"]["generation"] == 1;
      },
      std::chrono::seconds(10)))
      << "the archive did not load the generation before";
  EXPECT_EQ(QueriesCorrect(), "");
  EXPECT_GT(cluster_.ReadFigure("realtime_skip_rereads"), 0);
}

}  // namespace
}  // namespace clickatron::api::testing::integration_realtime_skip_test
