// A deletion's realtime part on a real clickatron-realtime (tombstones.h):
// installing a tombstone deletes the key's stored and in-memory records of
// the range and nothing else; while it waits for its cut, batches that
// would add to it are refused and others are not; after the cut, lines at
// or below a source's cut are dropped and later ones counted; a pending
// tombstone survives kill -9.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "daemon_fixture.h"
#include "testutil/testutil.h"

namespace clickatron::realtime::testing::integration_tombstone_test {
namespace {

class TombstoneIntegration : public StartedDaemonTest {
 protected:
  explicit TombstoneIntegration(const clickatron::testing::TomlTable& realtime = {}) : StartedDaemonTest(realtime) {}
  int Send(const std::string& source, uint64_t seq, const std::string& body) {
    int status = 0;
    daemon_.Incr(source, seq, body, &status);
    return status;
  }
  // The value /get answers for `key` ("" when it has none: 404).
  std::string Value(const std::string& key) {
    HttpResponse r = daemon_.Get("/get?key=" + Q(key));
    EXPECT_TRUE(r.status_code == 200 || r.status_code == 404) << r.status_code << " " << r.body;
    return r.status_code == 200 ? r.body.substr(0, r.body.size() - 1) : "";
  }
  nlohmann::json Install(const std::string& id, const std::string& tkey, const std::string& lookup = "") {
    const nlohmann::json body = {{"id", id},
                                 {"ns", "u"},
                                 {"tkey", tkey},
                                 {"lookup", lookup},
                                 {"from", today_ * kSecondsPerDay},
                                 {"to", (today_ + 1) * kSecondsPerDay}};
    HttpResponse r = daemon_.Post("/tombstone", body.dump());
    EXPECT_EQ(r.status_code, 200) << r.body;
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() ? j["data"] : nlohmann::json();
  }
  void Cut(const std::string& id, const nlohmann::json& cut) {
    HttpResponse r = daemon_.Post("/tombstone/cut", nlohmann::json{{"id", id}, {"cut", cut}}.dump());
    ASSERT_EQ(r.status_code, 200) << r.body;
  }

};

TEST_F(TombstoneIntegration, DeletesTheRangeOfOneKeyAndCountsWhatComesAfterTheCut) {
  const std::string long_key = "https://example.com/a/user/page/that/is/long";
  const std::string hashed = Hash12(long_key);
  const std::string victim = TotalKey("victim", today_, 3), victim_sub = SubtotalKey("c", "victim", "US", today_, 3);
  const std::string victim_tomorrow = TotalKey("victim", today_ + 1, 3);
  const std::string bystander = TotalKey("bystander", today_, 3);
  const std::string hashed_total = TotalKey(hashed, today_, 5);
  ASSERT_EQ(Send("api-0", 1, fmt::format("{},5\n{},5\n{},2\n{},1\n", victim, victim_sub, victim_tomorrow, bystander)), 200);
  ASSERT_EQ(Send("api-0", 2, fmt::format("{},4\nl|{},{}\n{},1\n", hashed_total, hashed, long_key, bystander)), 200);
  ASSERT_EQ(Value(victim), "5");
  ASSERT_EQ(Value("l|" + hashed), long_key);

  nlohmann::json installed = Install("d1", "victim");
  EXPECT_EQ(installed["epoch"], 1);
  EXPECT_EQ(installed["deleted_records"], 2);  // the total and its subtotal of today
  EXPECT_EQ(Value(victim), "");
  EXPECT_EQ(Value(victim_sub), "");
  EXPECT_EQ(Value(victim_tomorrow), "2");  // outside the range
  EXPECT_EQ(Value(bystander), "2");
  // The hashed key and its lookup: one tombstone more, with the lookup.
  EXPECT_EQ(Install("d2", hashed, "l|" + hashed)["deleted_records"], 2);
  EXPECT_EQ(Value(hashed_total), "");
  EXPECT_EQ(Value("l|" + hashed), "");

  // Pending: a batch adding to a deleted record waits; others do not.
  EXPECT_EQ(Send("api-0", 3, fmt::format("{},9\n{},1\n", victim, bystander)), 503);
  EXPECT_EQ(Send("api-0", 3, fmt::format("{},1\n", bystander)), 200);
  EXPECT_EQ(Value(bystander), "3");
  // The cut: api-0 had acknowledged up to 4 when the deletion was made.
  Cut("d1", {{"api-0", 4}, {"api-1", 0}});
  Cut("d2", {{"api-0", 4}, {"api-1", 0}});
  EXPECT_EQ(Send("api-0", 4, fmt::format("{},9\n{},1\n{},3\n", victim, bystander, victim_tomorrow)), 200);
  EXPECT_EQ(Value(victim), "");        // acknowledged before: dropped
  EXPECT_EQ(Value(bystander), "4");
  EXPECT_EQ(Value(victim_tomorrow), "5");
  EXPECT_EQ(Send("api-0", 5, fmt::format("{},7\n", victim)), 200);
  EXPECT_EQ(Value(victim), "7");       // after: counted, in an hour of the deleted range too
  EXPECT_EQ(Send("api-1", 1, fmt::format("{},2\n", victim)), 200);
  EXPECT_EQ(Value(victim), "9");
  // A second, different cut is refused; the same one again is fine.
  EXPECT_EQ(daemon_.Post("/tombstone/cut", R"({"id":"d1","cut":{"api-0":9}})").status_code, 409);
  EXPECT_EQ(daemon_.Post("/tombstone/cut", R"({"id":"d9","cut":{"api-0":9}})").status_code, 404);
  EXPECT_EQ(daemon_.Post("/tombstone", R"({"id":"d3","ns":"u","from":5,"to":3600})").status_code, 400);
}

// GET /export says up to which tombstone epoch it is clean: one read before
// a tombstone holds its records and says an earlier epoch; one read after it
// says its epoch and holds none of them (the rebuild takes a later
// tombstone's records out of an export: rebuild/deletions.h).
TEST_F(TombstoneIntegration, AnExportSaysWhichTombstonesItIsCleanOf) {
  const int64_t yesterday = today_ - 1;  // open still, and exportable
  const std::string victim = TotalKey("victim", yesterday, 3), bystander = TotalKey("bystander", yesterday, 3);
  ASSERT_EQ(Send("api-0", 1, fmt::format("{},5\n{},1\n", victim, bystander)), 200);
  const HttpResponse before = daemon_.AdminGet("/export?date=" + FormatDate(yesterday));
  ASSERT_EQ(before.status_code, 200) << before.body;
  EXPECT_EQ(before.Header("X-Tombstone-Epoch"), "0");
  EXPECT_NE(before.body.find(victim + ","), std::string::npos) << before.body;
  const nlohmann::json body = {{"id", "t1"},
                               {"ns", "u"},
                               {"tkey", "victim"},
                               {"from", yesterday * kSecondsPerDay},
                               {"to", today_ * kSecondsPerDay}};
  const HttpResponse installed = daemon_.Post("/tombstone", body.dump());
  ASSERT_EQ(installed.status_code, 200) << installed.body;
  EXPECT_NE(installed.body.find("\"epoch\":1"), std::string::npos) << installed.body;
  const HttpResponse after = daemon_.AdminGet("/export?date=" + FormatDate(yesterday));
  ASSERT_EQ(after.status_code, 200) << after.body;
  EXPECT_EQ(after.Header("X-Tombstone-Epoch"), "1");
  EXPECT_EQ(after.body.find(victim + ","), std::string::npos) << after.body;
  EXPECT_NE(after.body.find(bystander + ","), std::string::npos) << after.body;
}

// Checkpoints that can be stalled (DATA_DIR/fault/checkpoint-delay-ms).
class TombstoneWithStalledCheckpoints : public TombstoneIntegration {
 protected:
  TombstoneWithStalledCheckpoints()
      : TombstoneIntegration(
            clickatron::testing::TomlTable().SetRaw("fault_injection", "true").SetInt("checkpoint_interval_ms", 50)) {}
  void StallCheckpoints(int ms) {
    const std::string dir = daemon_.data_dir() + "/fault";
    std::filesystem::create_directories(dir);
    clickatron::testing::WriteAll(dir + "/checkpoint-delay-ms", std::to_string(ms));
  }
};

// Installs of one id sent while its first deletion run is out (the API
// retries a POST /tombstone that timed out, every second) join that run:
// one scan, and every answer says what it deleted. A run queued behind the
// first would scan again after the API had an answer and sent the cut,
// deleting increments acknowledged after the deletion. Here the run waits
// for a checkpoint stalled 2 s, while every install arrives; a cut sent
// meanwhile is refused.
TEST_F(TombstoneWithStalledCheckpoints, InstallsRetriedWhileItsRunIsOutJoinThatRun) {
  const std::string victim = TotalKey("victim", today_, 3), victim_sub = SubtotalKey("c", "victim", "US", today_, 3);
  const std::string bystander = TotalKey("bystander", today_, 3);
  StallCheckpoints(2000);  // before the batch: no checkpoint takes it unstalled
  ASSERT_EQ(Send("api-0", 1, fmt::format("{},5\n{},5\n{},1\n", victim, victim_sub, bystander)), 200);

  constexpr int kInstalls = 4;
  std::vector<nlohmann::json> answers(kInstalls);
  std::vector<std::thread> senders;
  for (int i = 0; i < kInstalls; ++i) senders.emplace_back([&, i] { answers[i] = Install("d1", "victim"); });
  // The run is out (pending): a cut now is refused, with a Retry-After.
  ASSERT_TRUE(clickatron::testing::WaitFor([&] {
    HttpResponse list = daemon_.Get("/tombstones");
    return list.status_code == 200 && list.body.find("\"d1\"") != std::string::npos;
  }));
  HttpResponse early = daemon_.Post("/tombstone/cut", R"({"id":"d1","cut":{"api-0":1}})");
  EXPECT_EQ(early.status_code, 503) << early.body;
  EXPECT_NE(early.body.find("TOMBSTONE_DELETING"), std::string::npos) << early.body;
  EXPECT_EQ(early.Header("Retry-After"), "1");
  for (std::thread& t : senders) t.join();
  for (int i = 0; i < kInstalls; ++i) {
    EXPECT_EQ(answers[i]["epoch"], 1) << answers[i].dump();
    EXPECT_EQ(answers[i]["deleted_records"], 2) << "install " << i << " was not answered by the one run: "
                                                << answers[i].dump();
  }
  EXPECT_EQ(Value(victim), "");
  EXPECT_EQ(Value(bystander), "1");
  Cut("d1", {{"api-0", 1}});
}

// Under steady traffic checkpoints run back to back, each reading the store
// through a snapshot taken when it froze. The install answers only once no
// checkpoint frozen before its delete is left: a read right after the
// answer is without the records (it read the frozen snapshot's copy).
TEST_F(TombstoneWithStalledCheckpoints, AReadRightAfterTheInstallsAnswerIsWithoutTheRecords) {
  const std::string victim = TotalKey("victim", today_, 3);
  // Stored records enough that a delete's scan outlasts the 50-ms tick: a
  // checkpoint freezes while it runs.
  std::string filler;
  for (int i = 0; i < 150000; ++i) filler += fmt::format("{},1\n", TotalKey(fmt::format("fill-{}", i), today_, i % 24));
  ASSERT_EQ(Send("api-0", 500000, filler), 200);
  for (int round = 0; round < 3; ++round) {
    const uint64_t first_seq = 500000 + 1000 * static_cast<uint64_t>(round) + 1;
    ASSERT_EQ(Send("api-0", first_seq, fmt::format("{},5\n", victim)), 200);
    ASSERT_TRUE(clickatron::testing::WaitFor([&] { return Value(victim) == "5"; }));
    StallCheckpoints(300);
    std::atomic<bool> stop{false};
    std::thread traffic([&] {
      for (uint64_t seq = first_seq + 1; !stop; ++seq) {
        Send("api-0", seq, fmt::format("{},1\n", TotalKey("other", today_, 4)));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    const std::string id = fmt::format("r{}", round);
    EXPECT_EQ(Install(id, "victim")["deleted_records"], 1);
    EXPECT_EQ(Value(victim), "") << "round " << round << ": read the records after the install's answer";
    stop = true;
    traffic.join();
    StallCheckpoints(0);
    // The next round's increments count again (after this cut).
    Cut(id, {{"api-0", first_seq + 999}});
  }
}

TEST_F(TombstoneIntegration, APendingTombstoneSurvivesKill9AndIsRetiredOnceItsCutIsDurable) {
  const std::string victim = TotalKey("victim", today_, 7);
  ASSERT_EQ(Send("api-0", 1, victim + ",5\n"), 200);
  Install("d1", "victim");
  daemon_.Kill();
  std::string error;
  ASSERT_TRUE(daemon_.Start(&error)) << error;
  // Restarted after a crash, the shard reads nothing until api-0 says it
  // has all it had (recovery_gate.h): api-0's poll, as the API sends it.
  EXPECT_EQ(daemon_.Get("/get?key=" + Q(victim)).status_code, 503);
  // Nor does it export (and seal) a day: api-0's re-sent lines would go to
  // late data and the archive would hold the day short.
  HttpResponse held = daemon_.AdminGet("/export?date=" + FormatDate(today_ - 1));
  EXPECT_EQ(held.status_code, 503) << held.body;
  EXPECT_NE(held.body.find("SHARD_RECOVERING"), std::string::npos) << held.body;
  auto recovering = [&] {
    return nlohmann::json::parse(daemon_.Get("/ring").body, nullptr, false)["data"].value("recovering", false);
  };
  EXPECT_TRUE(recovering());  // what `clickatron status` shows
  EXPECT_EQ(daemon_.Get("/watermark?source=api-0&heard=1").status_code, 200);
  EXPECT_FALSE(recovering());
  EXPECT_EQ(Value(victim), "");
  EXPECT_EQ(Send("api-0", 2, victim + ",1\n"), 503);  // still pending after the restart
  HttpResponse list = daemon_.Get("/tombstones");
  ASSERT_EQ(list.status_code, 200);
  nlohmann::json j = nlohmann::json::parse(list.body, nullptr, false);
  ASSERT_EQ(j["data"]["tombstones"].size(), 1u) << list.body;
  EXPECT_TRUE(j["data"]["tombstones"][0]["cut"].is_null());
  Cut("d1", {{"api-0", 2}});
  EXPECT_EQ(Send("api-0", 2, victim + ",1\n"), 200);
  EXPECT_EQ(Value(victim), "");
  // Once api-0's durable watermark reaches 2 (a checkpoint), nothing at or
  // below the cut can come again: the tombstone goes.
  EXPECT_TRUE(clickatron::testing::WaitFor([&] {
    HttpResponse r = daemon_.Get("/tombstones");
    return r.status_code == 200 && nlohmann::json::parse(r.body, nullptr, false)["data"]["tombstones"].empty();
  }));
  EXPECT_EQ(Send("api-0", 3, victim + ",6\n"), 200);
  EXPECT_EQ(Value(victim), "6");
  // Retired, but remembered: a retried install deletes nothing more, and
  // a retried cut is taken as the one it had (a different one is not).
  EXPECT_EQ(Install("d1", "victim")["deleted_records"], 0);
  EXPECT_EQ(Value(victim), "6");
  Cut("d1", {{"api-0", 2}});
  EXPECT_EQ(daemon_.Post("/tombstone/cut", R"({"id":"d1","cut":{"api-0":3}})").status_code, 409);
  // A source the shard has no watermark of counts as 0: a cut of 0 for it
  // does not keep a tombstone alive.
  Install("d2", "victim");
  Cut("d2", {{"api-0", 3}, {"api-1", 0}});
  EXPECT_TRUE(clickatron::testing::WaitFor([&] {
    HttpResponse r = daemon_.Get("/tombstones");
    return r.status_code == 200 && nlohmann::json::parse(r.body, nullptr, false)["data"]["tombstones"].empty();
  }));
}

}  // namespace
}  // namespace clickatron::realtime::testing::integration_tombstone_test
