// clickatron-realtime as a real process: increments, reads, replays, bad
// batches, exports, rotation and restarts, checked against std::map oracles.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <random>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "daemon_fixture.h"

namespace clickatron::realtime::testing {
namespace {

class RealtimeIntegrationTest : public StartedDaemonTest {
 protected:

  // Posts `body` as the next batch of source "api-0" and expects it applied.
  void Apply(const std::string& body) {
    nlohmann::json r = daemon_.Incr("api-0", ++seq_, body);
    ASSERT_TRUE(r.is_object()) << daemon_.LogTail();
    ASSERT_EQ(r["status_code"], 200) << r.dump();
    ASSERT_EQ(r["data"]["duplicate"], false) << r.dump();
  }

  std::string GetValue(const std::string& key, int* status = nullptr) {
    HttpResponse r = daemon_.Get("/get?key=" + Q(key));
    if (status) *status = r.status_code;
    return r.body;
  }

  uint64_t seq_ = 0;
};

TEST_F(RealtimeIntegrationTest, IncrementsAndReadsMatchAnOracle) {
  std::mt19937 rng(42);
  std::map<std::string, int64_t> counters;
  std::map<std::string, std::string> lookups;
  std::vector<std::string> keys;
  std::map<std::string, int64_t> day_of;
  for (int i = 0; i < 60; ++i) {
    const int64_t day = today_ - 1 + i % 3;
    keys.push_back(TotalKey("user" + std::to_string(i), day, i % 24));
    keys.push_back(SubtotalKey("c", "user" + std::to_string(i), i % 2 ? "US" : "JP", day, i % 24));
    day_of[keys[keys.size() - 2]] = day;
    day_of[keys.back()] = day;
  }
  for (int b = 0; b < 30; ++b) {
    std::string body;
    for (int j = 0; j < 40; ++j) {
      const std::string& key = keys[rng() % keys.size()];
      const int64_t delta = 1 + static_cast<int64_t>(rng() % 9);
      counters[key] += delta;
      body += key + "," + std::to_string(delta) + "\n";
    }
    const std::string value = "http://example.com/page/" + std::to_string(b);
    lookups["l|" + Hash12(value)] = value;
    body += "l|" + Hash12(value) + "," + value + "\n";
    ASSERT_NO_FATAL_FAILURE(Apply(body));
  }
  for (const auto& [key, want] : counters) EXPECT_EQ(GetValue(key), std::to_string(want) + "\n") << key;
  for (const auto& [key, want] : lookups) EXPECT_EQ(GetValue(key), want + "\n") << key;
  int status = 0;
  EXPECT_EQ(GetValue(TotalKey("nobody", today_, 1), &status), "");
  EXPECT_EQ(status, 404);

  // mget: the hits, in request order.
  auto it = counters.rbegin();
  const std::string k1 = it->first, k2 = std::next(it)->first, miss = TotalKey("nobody", today_, 2);
  HttpResponse mget = daemon_.Get("/mget?key=" + Q(k1) + "&key=" + Q(miss) + "&key=" + Q(k2));
  EXPECT_EQ(mget.status_code, 200);
  EXPECT_EQ(mget.body, k1 + "," + std::to_string(counters[k1]) + "\n" + k2 + "," + std::to_string(counters[k2]) + "\n");

  // fwmatch over every store, sorted, with and without limit and date.
  std::map<std::string, std::string> all;
  for (const auto& [k, v] : counters) all[k] = std::to_string(v);
  for (const auto& [k, v] : lookups) all[k] = v;
  auto expected_with_prefix = [&](const std::string& prefix, std::optional<int64_t> day, size_t limit) {
    std::string out;
    size_t n = 0;
    for (const auto& [k, v] : all) {
      if (k.rfind(prefix, 0) != 0) continue;
      if (day && day_of[k] != *day) continue;
      if (limit && n == limit) break;
      out += k + "," + v + "\n";
      ++n;
    }
    return out;
  };
  EXPECT_EQ(daemon_.Get("/fwmatch?key=" + Q("u|")).body, expected_with_prefix("u|", std::nullopt, 0));
  EXPECT_EQ(daemon_.Get("/fwmatch?key=" + Q("c.u|user1")).body, expected_with_prefix("c.u|user1", std::nullopt, 0));
  EXPECT_EQ(daemon_.Get("/fwmatch?key=" + Q("u|") + "&limit=5").body, expected_with_prefix("u|", std::nullopt, 5));
  EXPECT_EQ(daemon_.Get("/fwmatch?key=" + Q("u|") + "&date=" + Date(today_ + 1)).body,
            expected_with_prefix("u|", today_ + 1, 0));
  EXPECT_EQ(daemon_.Get("/fwmatch?key=").status_code, 200);
  EXPECT_EQ(daemon_.Get("/fwmatch").status_code, 400);
  EXPECT_EQ(daemon_.Get("/get?key=x&date=2024-13-01").status_code, 400);
}

TEST_F(RealtimeIntegrationTest, ReplayOfTheSameSourceAndSeqIsADuplicate) {
  const std::string key = TotalKey("replay", today_, 3);
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    nlohmann::json r = daemon_.Incr("api-0", seq, key + ",2\n");
    ASSERT_EQ(r["data"]["duplicate"], false);
    EXPECT_EQ(r["data"]["applied"], 1);
    EXPECT_EQ(r["data"]["seq"], seq);
  }
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    nlohmann::json r = daemon_.Incr("api-0", seq, key + ",2\n");
    EXPECT_EQ(r["status_code"], 200);
    EXPECT_EQ(r["data"]["duplicate"], true);
    EXPECT_EQ(r["data"]["applied"], 0);
    EXPECT_EQ(r["data"]["seq"], 5);
  }
  EXPECT_EQ(GetValue(key), "10\n");
  nlohmann::json wm = nlohmann::json::parse(daemon_.Get("/watermark?source=api-0").body);
  EXPECT_EQ(wm["data"]["seq"], 5);
  EXPECT_EQ(wm["data"]["source"], "api-0");
  wm = nlohmann::json::parse(daemon_.Get("/watermark?source=api-9").body);
  EXPECT_EQ(wm["data"]["seq"], 0);
  // A second source counts on its own.
  EXPECT_EQ(daemon_.Incr("api-1", 1, key + ",1\n")["data"]["duplicate"], false);
  EXPECT_EQ(GetValue(key), "11\n");
}

TEST_F(RealtimeIntegrationTest, BatchWithOneBadLineAppliesNothing) {
  const std::string a = TotalKey("atomic", today_, 1), b = TotalKey("atomic", today_ + 1, 1);
  int status = 0;
  nlohmann::json r = daemon_.Incr("api-0", 1, a + ",1\n" + b + ",2\n" + a + ",oops\n" + b + ",1\n", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(r["status_txt"], "BAD_LINE");
  EXPECT_NE(r["message"].get<std::string>().find("line 3"), std::string::npos) << r.dump();
  r = daemon_.Incr("api-0", 1, a + ",1\n" + b + ",0\n", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(r["message"].get<std::string>().find("line 2"), std::string::npos) << r.dump();
  GetValue(a, &status);
  EXPECT_EQ(status, 404);
  GetValue(b, &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(nlohmann::json::parse(daemon_.Get("/watermark?source=api-0").body)["data"]["seq"], 0);
  EXPECT_EQ(daemon_.Post("/incr?source=api-0", a + ",1\n").status_code, 400);         // no seq
  EXPECT_EQ(daemon_.Post("/incr?source=api-0&seq=0", a + ",1\n").status_code, 400);   // seqs start at 1
  EXPECT_EQ(daemon_.Post("/incr?seq=1", a + ",1\n").status_code, 400);                // no source

  // A line for a day outside the ring: 409 with the open days, nothing applied.
  const std::string old = TotalKey("atomic", today_ - 3, 1);
  r = daemon_.Incr("api-0", 1, a + ",1\n" + old + ",1\n", &status);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(r["status_txt"], "DAY_NOT_OPEN");
  EXPECT_EQ(r["open_days"], nlohmann::json({Date(today_ - 1), Date(today_), Date(today_ + 1)}));
  GetValue(a, &status);
  EXPECT_EQ(status, 404);
  // The rest under the same seq is then applied.
  r = daemon_.Incr("api-0", 1, a + ",1\n", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(r["data"]["duplicate"], false);
  EXPECT_EQ(GetValue(a), "1\n");
}

TEST_F(RealtimeIntegrationTest, ExportIsSortedCompleteAndRepeatable) {
  const int64_t yesterday = today_ - 1;
  std::map<std::string, int64_t> oracle;
  std::mt19937 rng(5);
  // ~12000 records of ~35 bytes: more than one 256 KiB chunk.
  for (int b = 0; b < 12; ++b) {
    std::string body;
    for (int j = 0; j < 1000; ++j) {
      const int n = b * 1000 + j;
      const std::string key = SubtotalKey("c", "user" + std::to_string(rng() % 5000), "C" + std::to_string(n % 7),
                                          yesterday, n % 24);
      const int64_t delta = 1 + static_cast<int64_t>(rng() % 3);
      oracle[key] += delta;
      body += key + "," + std::to_string(delta) + "\n";
    }
    ASSERT_NO_FATAL_FAILURE(Apply(body));
  }
  // Today's data must not appear in Yesterday's export.
  ASSERT_NO_FATAL_FAILURE(Apply(TotalKey("other", today_, 1) + ",1\n"));
  std::string expected;
  for (const auto& [k, v] : oracle) expected += k + "," + std::to_string(v) + "\n";
  ASSERT_GT(expected.size(), 256u << 10);

  HttpResponse first = daemon_.AdminGet("/export?date=" + Date(yesterday));
  ASSERT_EQ(first.status_code, 200) << first.body;
  EXPECT_EQ(first.body.size(), expected.size());
  EXPECT_TRUE(first.body == expected);
  std::vector<std::string> lines = Lines(first.body);
  EXPECT_TRUE(std::adjacent_find(lines.begin(), lines.end(), [](const std::string& x, const std::string& y) {
                return !(x < y);  // bytewise (std::string compares as unsigned char)
              }) == lines.end());
  HttpResponse second = daemon_.AdminGet("/export?date=" + Date(yesterday));
  EXPECT_TRUE(second.body == first.body);

  // Export sealed the day.
  int status = 0;
  nlohmann::json r = daemon_.Incr("api-0", ++seq_, TotalKey("late", yesterday, 5) + ",1\n", &status);
  EXPECT_EQ(status, 409);
  EXPECT_EQ(r["open_days"], nlohmann::json({Date(today_), Date(today_ + 1)}));
  nlohmann::json ring = daemon_.Ring();
  EXPECT_EQ(ring["stores"][0]["date"], Date(yesterday));
  EXPECT_EQ(ring["stores"][0]["state"], "sealed");
  EXPECT_EQ(daemon_.AdminGet("/export?date=" + Date(today_)).status_code, 409);
  EXPECT_EQ(daemon_.AdminGet("/export?date=" + Date(today_ - 10)).status_code, 404);
  EXPECT_EQ(daemon_.Get("/export?date=" + Date(yesterday)).status_code, 401);  // admin route
}

TEST_F(RealtimeIntegrationTest, RotationClearsOnlyExportedDays) {
  const std::string old_key = TotalKey("rot", today_ - 1, 2), mid_key = TotalKey("rot", today_, 2);
  ASSERT_NO_FATAL_FAILURE(Apply(old_key + ",3\n" + mid_key + ",4\n"));
  EXPECT_EQ(daemon_.Post("/rotate?today=" + Date(today_ + 1)).status_code, 401);
  HttpResponse rot = daemon_.AdminPost("/rotate?today=" + Date(today_ + 1));
  ASSERT_EQ(rot.status_code, 200) << rot.body;
  // today-1 had no export mark: retained, readable, closed.
  nlohmann::json ring = daemon_.Ring();
  EXPECT_EQ(ring["today"], Date(today_ + 1));
  EXPECT_EQ(ring["stores"][0]["date"], Date(today_ - 1));
  EXPECT_EQ(ring["stores"][0]["position"], "retained");
  EXPECT_EQ(ring["stores"][0]["state"], "sealed");
  EXPECT_EQ(GetValue(old_key), "3\n");
  int status = 0;
  daemon_.Incr("api-0", ++seq_, old_key + ",1\n", &status);
  EXPECT_EQ(status, 409);
  HttpResponse clear = daemon_.AdminPost("/clear?date=" + Date(today_ - 1));
  EXPECT_EQ(clear.status_code, 409);
  EXPECT_NE(clear.body.find("NOT_EXPORTED"), std::string::npos);

  // today is now Yesterday: export it, mark it; it stays until it leaves.
  ASSERT_EQ(daemon_.AdminGet("/export?date=" + Date(today_)).body, mid_key + ",4\n");
  HttpResponse mark = daemon_.AdminPost("/exported?date=" + Date(today_));
  EXPECT_EQ(nlohmann::json::parse(mark.body)["data"]["state"], "exported");
  EXPECT_EQ(GetValue(mid_key), "4\n");
  ASSERT_EQ(daemon_.AdminPost("/rotate?today=" + Date(today_ + 2)).status_code, 200);
  GetValue(mid_key, &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(GetValue(old_key), "3\n");  // still retained
  ring = daemon_.Ring();
  std::vector<std::string> dates;
  for (const auto& s : ring["stores"]) dates.push_back(s["date"]);
  EXPECT_EQ(dates, (std::vector<std::string>{Date(today_ - 1), Date(today_ + 1), Date(today_ + 2), Date(today_ + 3)}));

  // The mark for the retained day clears it at once.
  mark = daemon_.AdminPost("/exported?date=" + Date(today_ - 1));
  EXPECT_EQ(nlohmann::json::parse(mark.body)["data"]["state"], "cleared");
  GetValue(old_key, &status);
  EXPECT_EQ(status, 404);
  EXPECT_EQ(daemon_.Ring()["stores"].size(), 3u);
  // The ring never turns back.
  EXPECT_EQ(daemon_.AdminPost("/rotate?today=" + Date(today_)).status_code, 409);
  EXPECT_EQ(daemon_.AdminPost("/rotate").status_code, 400);  // manual clock: today required
}

TEST_F(RealtimeIntegrationTest, RestartKeepsRingStateDataAndWatermarks) {
  ASSERT_NO_FATAL_FAILURE(Apply(TotalKey("keep", today_ + 1, 6) + ",5\n"));
  ASSERT_EQ(daemon_.AdminPost("/rotate?today=" + Date(today_ + 2)).status_code, 200);
  ASSERT_EQ(daemon_.AdminGet("/export?date=" + Date(today_ + 1)).status_code, 200);
  ASSERT_NO_FATAL_FAILURE(Apply(TotalKey("keep", today_ + 2, 6) + ",7\n"));
  const nlohmann::json before = daemon_.Ring();
  ASSERT_EQ(daemon_.Stop(), 0);
  std::string error;
  ASSERT_TRUE(daemon_.Start(&error)) << error;
  nlohmann::json after = daemon_.Ring();
  EXPECT_EQ(after["today"], Date(today_ + 2));
  ASSERT_EQ(after["stores"].size(), before["stores"].size());
  for (size_t i = 0; i < after["stores"].size(); ++i) {
    EXPECT_EQ(after["stores"][i]["date"], before["stores"][i]["date"]);
    EXPECT_EQ(after["stores"][i]["position"], before["stores"][i]["position"]);
    EXPECT_EQ(after["stores"][i]["state"], before["stores"][i]["state"]);
  }
  EXPECT_EQ(after["open_days"], nlohmann::json({Date(today_ + 2), Date(today_ + 3)}));
  EXPECT_EQ(GetValue(TotalKey("keep", today_ + 1, 6)), "5\n");
  EXPECT_EQ(GetValue(TotalKey("keep", today_ + 2, 6)), "7\n");
  EXPECT_EQ(nlohmann::json::parse(daemon_.Get("/watermark?source=api-0").body)["data"]["seq"], seq_);
  // /stats carries the realtime figures.
  nlohmann::json stats = nlohmann::json::parse(daemon_.Get("/stats").body);
  EXPECT_TRUE(stats["data"]["realtime"]["stores"].is_array());
  EXPECT_NE(daemon_.Get("/metrics").body.find("clickatron_realtime_increments_applied_total"), std::string::npos);
}

TEST(RealtimeSystemClockTest, TheClockOwnsTheRing) {
  const auto clock_today = [] { return FloorDiv(static_cast<int64_t>(std::time(nullptr)), kSecondsPerDay); };
  const int64_t before = clock_today();
  RealtimeDaemon daemon("system");
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  const int64_t today = daemon.Today();
  const int64_t after = clock_today();
  EXPECT_TRUE(today == before || today == after) << Date(today);
  nlohmann::json ring = daemon.Ring();
  EXPECT_EQ(ring["clock"], "system");
  // An operator may ask the ring to catch up with the clock, not to move it.
  EXPECT_EQ(daemon.AdminPost("/rotate").status_code, 200);
  HttpResponse r = daemon.AdminPost("/rotate?today=" + Date(after + 5));
  EXPECT_EQ(r.status_code, 409);
  EXPECT_NE(r.body.find("CLOCK_IS_SYSTEM"), std::string::npos);
  // (Waiting covers a midnight that passes during the test: the daemon
  // checks the clock every second.)
  EXPECT_TRUE(clickatron::testing::WaitFor([&] { return daemon.Today() == clock_today(); }));
}

// Under the system clock an archive that says it reaches Today is refused
// (a damaged manifest, a wrong clock): taken as said it would close Today.
TEST(RealtimeSystemClockTest, AnArchiveReachingTodayIsRefusedAndTodayStaysOpen) {
  RealtimeDaemon daemon("system");
  std::string error;
  ASSERT_TRUE(daemon.Start(&error)) << error;
  const int64_t today = daemon.Today();
  HttpResponse r = daemon.AdminPost("/archived?through=" + Date(today));
  EXPECT_EQ(r.status_code, 409) << r.body;
  EXPECT_NE(r.body.find("ARCHIVE_AHEAD_OF_RING"), std::string::npos) << r.body;
  nlohmann::json ring = daemon.Ring();
  EXPECT_EQ(ring["archived_through"], "");
  bool today_open = false;
  for (const auto& store : ring["stores"]) today_open |= store["date"] == Date(daemon.Today()) && store["open"] == true;
  EXPECT_TRUE(today_open) << ring.dump();
  // A closed day is taken as before.
  EXPECT_EQ(daemon.AdminPost("/archived?through=" + Date(daemon.Today() - 2)).status_code, 200);
  EXPECT_EQ(daemon.Ring()["archived_through"], Date(daemon.Today() - 2));
}

}  // namespace
}  // namespace clickatron::realtime::testing
