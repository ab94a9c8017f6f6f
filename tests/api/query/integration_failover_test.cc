// Replica failover on the read path: one archive shard served by two
// replicas. A replica killed (or frozen) while queries run changes nothing in
// the answers; with both gone, or the realtime shard gone, queries answer
// 503 SHARD_UNAVAILABLE instead of a silently short series (except windows
// wholly inside the days the archive holds, which need no realtime data).
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <random>
#include <thread>

#include "api/query/cluster_fixture.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::api::testing::integration_failover_test {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kHour = 3600;

class IntegrationReadFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.WriteConfig();
    today_ = TestRingToday();
    std::mt19937_64 rng(7);
    for (int64_t h = (today_ - 20) * kDay; h < (today_ + 1) * kDay; h += kHour) {
      if (rng() % 3 == 0) continue;
      data_.AddAtRing("u", "failover", h, 1 + static_cast<int64_t>(rng() % 9),
                      {{"c", rng() % 2 ? "US" : "http://long.example/referrer"}}, today_);
    }
    cluster_.StartWithData(data_, today_, 3);
    ref_ = today_ * kDay + 20 * kHour;
    series_target_ = fmt::format("/clicks?ns=u&key=failover&unit=day&units=25&unit_reference_ts={}", ref_);
    breakdown_target_ =
        fmt::format("/breakdown?sns=c&ns=u&key=failover&unit=day&units=25&unit_reference_ts={}", ref_);
    want_series_ = ExpectedSeries(oracle::Rollup("day", 0, ref_, 25, data_.Hours("u", "failover")));
    std::map<std::string, int64_t> sums;
    for (const auto& [value, hours] : data_.SubHours("c", "u", "failover")) {
      for (const auto& u : oracle::Rollup("day", 0, ref_, 25, hours)) sums[value] += u.clicks;
    }
    want_breakdown_ = ExpectedTop(sums, 100);
  }

  // Both queries, compared with the oracle; false (with a note) on any miss.
  bool QueriesCorrect(std::string* why) {
    auto s = cluster_.Api(series_target_);
    if (s["http_status"] != 200 || s["data"]["clicks"] != want_series_) {
      *why = "series: " + s.dump();
      return false;
    }
    auto b = cluster_.Api(breakdown_target_);
    if (b["http_status"] != 200 || b["data"]["breakdown"] != want_breakdown_) {
      *why = "breakdown: " + b.dump();
      return false;
    }
    return true;
  }

  // 1 archive shard x 2 replicas, 1 realtime shard; short timeout for the
  // frozen-replica case.
  ReadCluster cluster_{ReadCluster::Spec{.realtime_shards = 1, .archive_shards = 1, .replicas = 2,
                                         .request_timeout_ms = 400}};
  ReadDataset data_;
  int64_t today_ = 0;
  int64_t ref_ = 0;
  std::string series_target_, breakdown_target_;
  nlohmann::json want_series_, want_breakdown_;
};

TEST_F(IntegrationReadFailoverTest, ReplicaKilledDuringQueriesChangesNothing) {
  std::string why;
  ASSERT_TRUE(QueriesCorrect(&why)) << why;
  // Queries run on a second thread while the first replica is killed.
  std::atomic<bool> killed{false};
  std::atomic<int> after_kill{0}, wrong{0};
  std::string first_wrong;
  std::thread load([&] {
    for (int i = 0; i < 400 && after_kill < 20; ++i) {
      const bool was_killed = killed;
      std::string w;
      if (!QueriesCorrect(&w)) {
        if (wrong++ == 0) first_wrong = w;
      }
      if (was_killed) ++after_kill;
    }
  });
  ASSERT_TRUE(clickatron::testing::WaitFor([&] { return cluster_.ReadFigure("archive_requests") >= 20; }));
  cluster_.Daemon(cluster_.ArchiveMember(0, 0)).Kill();
  killed = true;
  load.join();
  EXPECT_EQ(wrong, 0) << first_wrong;
  EXPECT_GE(after_kill, 20);
  EXPECT_GT(cluster_.ReadFigure("archive_failovers"), 0);
}

TEST_F(IntegrationReadFailoverTest, FrozenReplicaTimesOutAndFailsOver) {
  DaemonProcess& frozen = cluster_.Daemon(cluster_.ArchiveMember(0, 1));
  ASSERT_EQ(::kill(frozen.pid(), SIGSTOP), 0);
  for (int i = 0; i < 6; ++i) {
    std::string why;
    EXPECT_TRUE(QueriesCorrect(&why)) << why;
  }
  EXPECT_GT(cluster_.ReadFigure("archive_failovers"), 0);
  ASSERT_EQ(::kill(frozen.pid(), SIGCONT), 0);
}

// A frozen realtime shard (SIGSTOP: the connection stays open, nothing is
// answered) lets a query's request time out; asking it again would only
// double the client's wait before the 503.
TEST_F(IntegrationReadFailoverTest, FrozenRealtimeShardIsNotAskedAgainAfterATimeout) {
  std::string why;
  ASSERT_TRUE(QueriesCorrect(&why)) << why;
  DaemonProcess& frozen = cluster_.Daemon("realtime-0");
  ASSERT_EQ(::kill(frozen.pid(), SIGSTOP), 0);
  const int64_t requests_before = cluster_.ReadFigure("realtime_requests");
  auto j = cluster_.Api(series_target_);
  EXPECT_EQ(j["http_status"], 503) << j.dump();
  EXPECT_EQ(j["status_txt"], "SHARD_UNAVAILABLE") << j.dump();
  EXPECT_NE(j["message"].get<std::string>().find("timed out"), std::string::npos) << j.dump();
  EXPECT_EQ(cluster_.ReadFigure("realtime_retries"), 0);
  EXPECT_EQ(cluster_.ReadFigure("realtime_requests") - requests_before, 1) << "the frozen shard was asked again";
  ASSERT_EQ(::kill(frozen.pid(), SIGCONT), 0);
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return QueriesCorrect(&why); }, std::chrono::seconds(10))) << why;
}

TEST_F(IntegrationReadFailoverTest, BothReplicasDownIsShardUnavailable) {
  cluster_.Daemon(cluster_.ArchiveMember(0, 0)).Kill();
  cluster_.Daemon(cluster_.ArchiveMember(0, 1)).Kill();
  for (const std::string& target : {series_target_, breakdown_target_}) {
    auto j = cluster_.Api(target);
    EXPECT_EQ(j["http_status"], 503) << j.dump();
    EXPECT_EQ(j["status_txt"], "SHARD_UNAVAILABLE") << j.dump();
    EXPECT_TRUE(j["data"].is_null());
  }
  EXPECT_GE(cluster_.ReadFigure("unavailable"), 2);
  // Back: answers are whole again.
  cluster_.Start(cluster_.ArchiveMember(0, 1));
  std::string why;
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return QueriesCorrect(&why); }, std::chrono::seconds(10))) << why;
}

// A replica that lost its file answers as an empty archive (generation 0).
// An API node that has seen generation 3 refuses such answers, also after it
// restarts (it keeps the generation in its data dir), instead of returning a
// series without the archived days.
TEST_F(IntegrationReadFailoverTest, RestartedApiStillRefusesReplicasThatLostTheirFile) {
  std::string why;
  ASSERT_TRUE(QueriesCorrect(&why)) << why;  // the API sees generation 3
  cluster_.Daemon("api-0").Kill();
  for (int r = 0; r < 2; ++r) cluster_.Daemon(cluster_.ArchiveMember(0, r)).Kill();
  const std::string file = cluster_.ArchiveFilePath(0);
  ASSERT_EQ(std::remove(file.c_str()), 0);
  ASSERT_EQ(std::remove(ManifestPathFor(file).c_str()), 0);
  for (int r = 0; r < 2; ++r) cluster_.Start(cluster_.ArchiveMember(0, r));
  cluster_.StartApi();
  for (const std::string& target : {series_target_, breakdown_target_}) {
    auto j = cluster_.Api(target);
    EXPECT_EQ(j["http_status"], 503) << j.dump();
    EXPECT_EQ(j["status_txt"], "SHARD_UNAVAILABLE") << j.dump();
  }
  // The file back and reloaded (SIGHUP): whole answers again.
  cluster_.WriteArchives(data_, 3, FormatDate(today_ - 1));
  for (int r = 0; r < 2; ++r) ASSERT_EQ(::kill(cluster_.Daemon(cluster_.ArchiveMember(0, r)).pid(), SIGHUP), 0);
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return QueriesCorrect(&why); }, std::chrono::seconds(10))) << why;
}

// Queries read one archive format (2: every day and span record there is).
// A file whose manifest says an older one (a file brought in by hand and
// never converted) is refused with what to do, not read as if it had the
// records; `clickatron manifest --force` converts it (here under the same
// generation number: another file, whose manifest is asked anew), and the
// answers are whole again.
TEST_F(IntegrationReadFailoverTest, AFileOfAnOlderFormatIsRefusedUntilConverted) {
  std::string why;
  ASSERT_TRUE(QueriesCorrect(&why)) << why;
  const std::string file = cluster_.ArchiveFilePath(0);
  cluster_.WriteArchives(data_, 4, FormatDate(today_ - 1));
  auto manifest = ReadManifest(ManifestPathFor(file));
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  manifest->format = 1;
  manifest->day_subtotals_every_day = false;
  manifest->day_uniques_every_day = false;
  ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(file), *manifest).ok());
  for (int r = 0; r < 2; ++r) ASSERT_EQ(::kill(cluster_.Daemon(cluster_.ArchiveMember(0, r)).pid(), SIGHUP), 0);
  nlohmann::json refused;
  EXPECT_TRUE(clickatron::testing::WaitFor(
      [&] {
        refused = cluster_.Api(series_target_);
        return refused["status_txt"] == "OLD_ARCHIVE_FORMAT";
      },
      std::chrono::seconds(10)))
      << refused.dump();
  EXPECT_EQ(refused["http_status"], 503) << refused.dump();
  EXPECT_NE(refused.dump().find("clickatron manifest"), std::string::npos) << refused.dump();

  std::string output;
  ASSERT_EQ(clickatron::testing::RunCommand({clickatron::testing::BinaryPath("clickatron"), "manifest", "--force",
                                             "--generation", "4", file},
                                            &output),
            0)
      << output;
  for (int r = 0; r < 2; ++r) ASSERT_EQ(::kill(cluster_.Daemon(cluster_.ArchiveMember(0, r)).pid(), SIGHUP), 0);
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return QueriesCorrect(&why); }, std::chrono::seconds(10))) << why;
}

TEST_F(IntegrationReadFailoverTest, RealtimeShardDownIsShardUnavailable) {
  cluster_.Daemon("realtime-0").Kill();
  auto j = cluster_.Api(series_target_);
  EXPECT_EQ(j["http_status"], 503) << j.dump();
  EXPECT_EQ(j["status_txt"], "SHARD_UNAVAILABLE");
  auto b = cluster_.Api(breakdown_target_);
  EXPECT_EQ(b["status_txt"], "SHARD_UNAVAILABLE");
  // A window that ends within the days the archive holds does not need
  // realtime: it is still answered, in full.
  const int64_t old_ref = (today_ - 3) * kDay + 5 * kHour;
  auto old = cluster_.Api(fmt::format("/clicks?ns=u&key=failover&unit=day&units=5&unit_reference_ts={}", old_ref));
  ASSERT_EQ(old["http_status"], 200) << old.dump();
  EXPECT_EQ(old["data"]["clicks"], ExpectedSeries(oracle::Rollup("day", 0, old_ref, 5, data_.Hours("u", "failover"))));
  std::map<std::string, int64_t> sums;
  for (const auto& [value, hours] : data_.SubHours("c", "u", "failover")) {
    for (const auto& u : oracle::Rollup("day", 0, old_ref, 5, hours)) sums[value] += u.clicks;
  }
  auto old_b = cluster_.Api(
      fmt::format("/breakdown?sns=c&ns=u&key=failover&unit=day&units=5&unit_reference_ts={}", old_ref));
  ASSERT_EQ(old_b["http_status"], 200) << old_b.dump();
  EXPECT_EQ(old_b["data"]["breakdown"], ExpectedTop(sums, 100));
}

}  // namespace
}  // namespace clickatron::api::testing::integration_failover_test
