// History bulk-loaded into a brand-new cluster is served as soon as its
// generation is deployed (issue 7): before any nightly run has set the
// archive's last_day, and also for hours of a day the realtime ring still
// holds, where the loaded and the live clicks are different clicks and add up.
// The nightly run that follows must count nothing twice.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <fmt/format.h>

#include "clickatron/ymdh.h"
#include "integration/cluster_fixture.h"

namespace clickatron::integration {
namespace {

using clickatron::testing::HttpPost;
using clickatron::testing::WaitFor;

const std::string kToday = "2024-06-10";
const std::string kTomorrow = "2024-06-11";
const std::vector<std::string> kKeys = {"loaded", "mixed", "live"};
const std::vector<std::string> kCountries = {"US", "JP", "DE"};

class BulkLoadTest : public StartedClusterTest {
 protected:
  BulkLoadTest() : StartedClusterTest(kToday) {}

  // One increment written as realtime-format history lines (a total and a
  // country subtotal), the format `clickatron-rebuild load` takes by default.
  void AddHistory(const std::string& key, int64_t ts, int64_t value, const std::string& country) {
    Increment inc;
    inc.key = key;
    inc.ts = ts;
    inc.value = value;
    inc.subs.emplace_back("c", country);
    oracle_.Add(inc);
    history_increments_.push_back(inc);
    const std::string ymdh = *YmdhFromUnix(ts);
    history_ += fmt::format("u|{}.{},{}\n", key, ymdh, value);
    history_ += fmt::format("c.u|{}.{}.{},{}\n", key, country, ymdh, value);
  }

  void SendLive(const std::string& key, int64_t ts, int64_t value, const std::string& country) {
    Increment inc;
    inc.key = key;
    inc.ts = ts;
    inc.value = value;
    inc.subs.emplace_back("c", country);
    oracle_.Add(inc);
    live_body_ += inc.QueryString() + "\n";
  }

  void ExpectQueriesMatch(const std::string& step) {
    std::string diff;
    bool equal = WaitFor(
        [&] {
          diff = CompareQueries(cluster_, oracle_, kKeys, reference_ts_);
          return diff.empty();
        },
        std::chrono::seconds(30));
    EXPECT_TRUE(equal) << "after " << step << ": " << diff;
  }

  Oracle oracle_;
  std::string history_;
  std::vector<Increment> history_increments_;
  std::string live_body_;
  std::mt19937 rng_{20240610};
  int64_t reference_ts_ = UnixOfDate(kToday) + 86400 - 1;
};

TEST_F(BulkLoadTest, LoadedHistoryIsServedAtOnceAndCountedOnceAfterTheNightlyRun) {
  const int64_t today = UnixOfDate(kToday);
  // 40 days of history for "loaded" and "mixed", and hours of today for
  // "mixed", which also gets live clicks today.
  for (int i = 0; i < 400; ++i) {
    const std::string& key = kKeys[i % 2];
    const int64_t ts = today - 40 * 86400 + static_cast<int64_t>(rng_() % (40 * 86400));
    AddHistory(key, ts, 1 + static_cast<int64_t>(rng_() % 5), kCountries[rng_() % kCountries.size()]);
  }
  for (int h = 0; h < 6; ++h) AddHistory("mixed", today + h * 3600 + 60, 10 + h, "US");
  const std::string file = cluster_.dir() + "/history.csv";
  {
    std::ofstream out(file);
    out << history_;
  }
  for (int i = 0; i < 120; ++i) {
    const std::string& key = kKeys[1 + i % 2];
    SendLive(key, today + static_cast<int64_t>(rng_() % 86400), 1 + static_cast<int64_t>(rng_() % 3),
             kCountries[rng_() % kCountries.size()]);
  }
  auto r = HttpPost(cluster_.api(), "/incr", live_body_, 15000);
  ASSERT_EQ(r.status_code, 200) << r.body << r.transport.ToString();

  std::string output;
  ASSERT_EQ(cluster_.Load({"--now", file}, &output), 0) << output;
  // The generation holds history only: no nightly run has set last_day yet.
  auto manifest = clickatron::testing::HttpGet(cluster_.member("archive-0").listen, "/manifest");
  auto m = nlohmann::json::parse(manifest.body, nullptr, false);
  ASSERT_FALSE(m.is_discarded()) << manifest.body;
  EXPECT_EQ(m["data"]["generation"], 1) << manifest.body;
  EXPECT_EQ(m["data"]["last_day"], "") << manifest.body;
  ExpectQueriesMatch("load --now into a new cluster");

  // The nightly run of today: the live clicks move into the archive beside
  // the loaded ones of the same hours.
  std::string error;
  ASSERT_TRUE(cluster_.RotateAll(kTomorrow, &error)) << error;
  ASSERT_EQ(cluster_.Rebuild(kToday, &output), 0) << output;
  ExpectQueriesMatch("the nightly run after the load");
}

// The same data loaded twice would be counted twice. A load of the files of
// a load still queued is taken as that load (a rerun of `load --now`): it is
// folded once. Content already loaded is refused under any name, and
// loaded again only with --force. A plain file without its last newline
// (cut short) is refused before anything is queued.
TEST_F(BulkLoadTest, TheSameDataIsNotLoadedTwiceByMistake) {
  const int64_t today = UnixOfDate(kToday);
  for (int i = 0; i < 200; ++i) {
    const int64_t ts = today - 20 * 86400 + static_cast<int64_t>(rng_() % (20 * 86400));
    AddHistory(kKeys[i % 2], ts, 1 + static_cast<int64_t>(rng_() % 5), kCountries[rng_() % kCountries.size()]);
  }
  const std::string file = cluster_.dir() + "/history.csv";
  const std::string copy = cluster_.dir() + "/history-copy.csv";
  for (const std::string& path : {file, copy}) {
    std::ofstream out(path);
    out << history_;
  }
  std::string output;
  // Queued only; then the same command with --now (as after a failed deploy)
  // folds that load instead of queueing the file a second time.
  ASSERT_EQ(cluster_.Load({file}, &output), 0) << output;
  ASSERT_EQ(cluster_.Load({"--now", file}, &output), 0) << output;
  EXPECT_NE(output.find("not queued again"), std::string::npos) << output;
  ExpectQueriesMatch("a queued load run again with --now");

  // Folded: the same bytes, under its name or another, are refused.
  for (const std::string& path : {file, copy}) {
    EXPECT_NE(cluster_.Load({"--now", path}, &output), 0) << output;
    EXPECT_NE(output.find("ALREADY_LOADED"), std::string::npos) << output;
  }
  // One file given twice in one command.
  EXPECT_NE(cluster_.Load({file, copy}, &output), 0) << output;
  EXPECT_NE(output.find("ALREADY_LOADED"), std::string::npos) << output;
  ExpectQueriesMatch("refused loads of the same data");

  // A file cut mid-line: "…,12" cut to "…,1" would load a wrong count.
  const std::string cut = cluster_.dir() + "/cut.csv";
  {
    std::ofstream out(cut);
    out << fmt::format("u|{}.{},12\nu|{}.{},1", kKeys[0], *YmdhFromUnix(today - 86400), kKeys[0],
                       *YmdhFromUnix(today - 86400));
  }
  EXPECT_NE(cluster_.Load({"--now", cut}, &output), 0) << output;
  EXPECT_NE(output.find("CUT_FILE"), std::string::npos) << output;
  ExpectQueriesMatch("a cut file refused");

  // --force: counted again, on purpose.
  ASSERT_EQ(cluster_.Load({"--now", "--force", copy}, &output), 0) << output;
  for (const Increment& inc : history_increments_) oracle_.Add(inc);
  ExpectQueriesMatch("the copy loaded again with --force");
}

}  // namespace
}  // namespace clickatron::integration
