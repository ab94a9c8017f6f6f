// POST /delete and the nightly rebuild on real daemons: the next generation
// holds none of what the deletion covers (archive, late data and a load
// acknowledged before it, the realtime day) and everything that came after
// it, also in the deleted hours; reads answer the same before and after the
// deploy; API nodes learn which generation folded it in.
#include <ctime>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "clickatron/key_codec.h"
#include "clickatron/query_string.h"
#include "rebuild_cluster_fixture.h"

namespace clickatron::integration_delete_fold_test {
namespace {

class DeleteFoldIntegration : public RebuildIntegration {
 protected:
  // A deletion asks every API member for its oplog heads: no member that
  // never runs (api-1 takes no increments of its own here).
  DeleteFoldIntegration() { loader_ = "api-1"; }

  // POST /incr on api-0 (lines of "ns=…&key=…&ts=…&value=…[&sub=…]").
  void IncrThroughApi(const std::string& lines) {
    HttpResponse r = HttpPost(cluster_.Api(0), "/incr", lines, 10000);
    ASSERT_EQ(r.status_code, 200) << r.body;
  }
  int64_t ApiFigure(const std::string& name) {
    HttpResponse r = HttpGet(cluster_.Api(0), "/stats", 5000, kToken);
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j["data"].is_object() || !j["data"]["write"].is_object()) {
      ADD_FAILURE() << "GET /stats: " << r.status_code << " " << r.body.substr(0, 300);
      return -1;
    }
    return j["data"]["write"].value(name, int64_t{-1});
  }
  // An /incr line of `value` at `hour` of `day` for ns|key (with `country`,
  // also its "c" subtotal), added to *expect.
  static std::string IncrLine(Expectation* expect, const std::string& ns, const std::string& key, int64_t day,
                              int hour, int64_t value, const std::string& country = "") {
    expect->AddTotal(ns, key, Ymdh(day, hour), value);
    if (!country.empty()) expect->AddSubtotal("c", ns, key, country, Ymdh(day, hour), value);
    return fmt::format("ns={}&key={}&ts={}&value={}{}\n", ns, key,
                       day * kSecondsPerDay + hour * kSecondsPerHour + 60, value,
                       country.empty() ? "" : "&sub=c:" + country);
  }
  // Realtime lines of a hashed key of u (its lookup, and per hour its total
  // and its `country` subtotal), added to *expect when given.
  static std::vector<std::string> HashedKeyLines(const std::string& value, int64_t day,
                                                 const std::map<int, int64_t>& clicks, const std::string& country,
                                                 Expectation* expect) {
    const StoredKeyPart key = StoreKeyPart(value);
    std::vector<std::string> lines = {"l|" + key.stored + "," + value};
    for (const auto& [hour, n] : clicks) {
      lines.push_back(fmt::format("u|{}.{},{}", key.stored, Ymdh(day, hour), n));
      lines.push_back(fmt::format("c.u|{}.{}.{},{}", key.stored, country, Ymdh(day, hour), n));
      if (expect == nullptr) continue;
      expect->AddTotal("u", key.stored, Ymdh(day, hour), n);
      expect->AddSubtotal("c", "u", key.stored, country, Ymdh(day, hour), n);
    }
    if (expect != nullptr && key.hashed) expect->AddLookup(key.stored, value);
    return lines;
  }
  // api-0's open late file sealed now (a nightly run folds sealed files only).
  void SealLateData() {
    HttpResponse sealed = Admin("POST", cluster_.Api(0).port, "/late/seal");
    ASSERT_EQ(sealed.status_code, 200) << sealed.body;
  }
  // Lines for a closed day go to api-0's late data: waits until `lines` are there.
  void WaitForLateLines(int64_t lines) {
    ASSERT_TRUE(WaitFor([&] { return ApiFigure("late_lines_written") >= lines; })) << ApiFigure("late_lines_written");
  }
  std::string Queue(const std::string& name, const std::string& data) {
    const std::string path = cluster_ / name;
    EXPECT_TRUE(WriteFileAtomically(path, data).ok());
    std::string out;
    EXPECT_EQ(Rebuild({"load", "--config", cluster_.config_path(), path}, &out), 0) << out;
    return out;
  }
  // Loads and deletions are ordered by their second: the next one starts.
  static void NextSecond() {
    const std::time_t now = std::time(nullptr);
    ASSERT_TRUE(WaitFor([&] { return std::time(nullptr) > now; }));
  }
  // The deletion's id once every node says it is effective.
  std::string Delete(const std::string& query) {
    HttpResponse r = HttpPost(cluster_.Api(0), "/delete?" + query, "", 10000, kToken);
    EXPECT_EQ(r.status_code, 202) << r.body;
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object()) return "";
    const std::string id = j["data"].value("id", "");
    EXPECT_TRUE(WaitFor([&] { return Status(1, id).value("effective", false); })) << Status(1, id).dump();
    return id;
  }
  nlohmann::json Status(int api, const std::string& id) {
    HttpResponse r = HttpGet(cluster_.Api(api), "/delete/" + id, 5000, kToken);
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j["data"].is_object() ? j["data"] : nlohmann::json::object();
  }
  // /clicks of u|KEY per hour over days `first` .. first+1 (day_ when not
  // given; hours with clicks only), read on api-1.
  std::map<int64_t, int64_t> HourlyClicks(const std::string& key, std::optional<int64_t> first = std::nullopt) {
    const int64_t ref = (first.value_or(day_) + 2) * kSecondsPerDay - 1;  // the last hour of the second day
    HttpResponse r = HttpGet(
        cluster_.Api(1),
        fmt::format("/clicks?ns=u&key={}&unit=hour&units=48&unit_reference_ts={}", PercentEncode(key), ref), 10000);
    EXPECT_EQ(r.status_code, 200) << r.body;
    std::map<int64_t, int64_t> hours;
    const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object()) return hours;
    for (const auto& u : j["data"]["clicks"]) {
      if (u["clicks"].get<int64_t>() != 0) hours[u["dt"].get<int64_t>()] = u["clicks"].get<int64_t>();
    }
    return hours;
  }
  static std::map<int64_t, int64_t> ExpectedHours(const Expectation& expect, const std::string& key, int64_t first_day) {
    std::map<int64_t, int64_t> hours;
    for (int64_t h = first_day * kSecondsPerDay; h < (first_day + 2) * kSecondsPerDay; h += kSecondsPerHour) {
      const int64_t c = expect.HourClicks("u|" + key, *YmdhFromUnix(h));
      if (c != 0) hours[h] = c;
    }
    return hours;
  }
};

// One key from 03:00 of the day before the archived one to noon of the
// realtime day; the next nightly run folds it in. Before the deletion: the
// archive, the realtime day, late data (increments for a closed day sent
// through the API: the day before the ring's, so always within the API's
// 24 hours ahead of the clock) and a queued load. After it: more of each, in the deleted
// hours too. Every other key keeps everything.
TEST_F(DeleteFoldIntegration, TheNextGenerationHoldsOnlyWhatCameAfterIt) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(11, 400, &expect));  // day_ in generation 1
  ASSERT_NO_FATAL_FAILURE(StartApi(1));  // api-0 runs from SetUp
  PutRandomDay(day_ + 1, 12, 400, &expect);  // the ring's open day
  const std::string victim = "key3";
  const int64_t closed = day_ - 1;  // no longer in the ring: its increments go to late data
  const int64_t from = closed * kSecondsPerDay + 3 * kSecondsPerHour;
  const int64_t to = (day_ + 1) * kSecondsPerDay + 12 * kSecondsPerHour;
  const auto incr = [&](const std::string& key, int64_t day, int hour, int64_t value) {
    return IncrLine(&expect, "u", key, day, hour, value, "NZ");
  };

  // Before: late data for the closed day, the deleted key's and another's.
  ASSERT_NO_FATAL_FAILURE(IncrThroughApi(incr(victim, closed, 5, 7) + incr(victim, closed, 1, 2) + incr("key4", closed, 5, 3)));
  ASSERT_NO_FATAL_FAILURE(WaitForLateLines(6));
  Queue("before.csv", fmt::format("u|{}.{},100\nu|key9.{},9\n", victim, Ymdh(day_, 8), Ymdh(day_, 8)));
  expect.AddTotal("u", victim, Ymdh(day_, 8), 100);
  expect.AddTotal("u", "key9", Ymdh(day_, 8), 9);
  ASSERT_NO_FATAL_FAILURE(NextSecond());

  const std::string id = Delete(fmt::format("ns=u&key={}&from={}&to={}", victim, from, to));
  ASSERT_FALSE(id.empty());
  const std::set<std::string> deleted_keys = {victim};
  expect.Forget("u", from, to, &deleted_keys);
  ASSERT_NO_FATAL_FAILURE(NextSecond());

  // After: late data and a load in the deleted hours, realtime increments too.
  ASSERT_NO_FATAL_FAILURE(IncrThroughApi(incr(victim, closed, 6, 40)));
  ASSERT_NO_FATAL_FAILURE(WaitForLateLines(8));
  Queue("after.csv", fmt::format("u|{}.{},500\n", victim, Ymdh(day_, 9)));
  expect.AddTotal("u", victim, Ymdh(day_, 9), 500);
  SendRealtimeLines({fmt::format("u|{}.{},30", victim, Ymdh(day_ + 1, 4))});
  expect.AddTotal("u", victim, Ymdh(day_ + 1, 4), 30);

  EXPECT_FALSE(Status(0, id).value("physical", true));
  // Reads already answer without what it deleted, before any rebuild (the
  // load after it counts once a generation holds it).
  std::map<int64_t, int64_t> before_rebuild = ExpectedHours(expect, victim, day_);
  const int64_t load_hour = day_ * kSecondsPerDay + 9 * kSecondsPerHour;
  if ((before_rebuild[load_hour] -= 500) == 0) before_rebuild.erase(load_hour);
  EXPECT_EQ(HourlyClicks(victim), before_rebuild);

  ASSERT_NO_FATAL_FAILURE(SealLateData());
  RotateAll(day_ + 2);
  std::string out;
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 2);
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  // Both API nodes heard that generation 2 folded it in; reads are the same.
  EXPECT_EQ(Status(0, id).value("folded_into", uint64_t{0}), 2u) << Status(0, id).dump();
  EXPECT_EQ(Status(1, id).value("folded_into", uint64_t{0}), 2u) << Status(1, id).dump();
  EXPECT_EQ(HourlyClicks(victim), ExpectedHours(expect, victim, day_));
  EXPECT_EQ(HourlyClicks(victim, closed), ExpectedHours(expect, victim, closed));
  EXPECT_EQ(HourlyClicks("key4", closed), ExpectedHours(expect, "key4", closed));
  // Physical: api-0's late file, now done, was rewritten without the lines
  // the deletion took out and keeps the others (the header of every batch
  // too); the deletion says so on both nodes.
  EXPECT_TRUE(WaitFor([&] { return Status(1, id).value("physical", false); })) << Status(1, id).dump();
  std::string done_files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(LateDir(0), ec)) {
    if (entry.path().string().ends_with(".done")) done_files += *ReadFileToString(entry.path().string());
  }
  EXPECT_EQ(done_files.find(fmt::format("u|{}.{},7", victim, Ymdh(closed, 5))), std::string::npos);
  EXPECT_EQ(done_files.find(fmt::format("c.u|{}.NZ.{},7", victim, Ymdh(closed, 5))), std::string::npos);
  EXPECT_NE(done_files.find(fmt::format("u|{}.{},2", victim, Ymdh(closed, 1))), std::string::npos)
      << "outside the range";
  EXPECT_NE(done_files.find(fmt::format("u|{}.{},40", victim, Ymdh(closed, 6))), std::string::npos) << "after it";
  EXPECT_NE(done_files.find(fmt::format("u|key4.{},3", Ymdh(closed, 5))), std::string::npos) << "another key";

  // The next run folds nothing of it again, and takes nothing more out.
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_EQ(Status(0, id).value("folded_into", uint64_t{0}), 2u);
}

// A whole namespace over two and a half days, crossed with late data and a
// queued load before and after it: the next generation holds only what came
// after it of that namespace, and all of another namespace.
TEST_F(DeleteFoldIntegration, ANamespaceDeletionKeepsOnlyWhatCameAfterIt) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(81, 300, &expect));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  PutRandomDay(day_ + 1, 82, 300, &expect);
  const int64_t closed = day_ - 1;  // no longer in the ring: its increments go to late data
  ASSERT_NO_FATAL_FAILURE(IncrThroughApi(IncrLine(&expect, "u", "key2", closed, 4, 9) +
                                         IncrLine(&expect, "v", "other", closed, 4, 3)));
  ASSERT_NO_FATAL_FAILURE(WaitForLateLines(2));
  Queue("before.csv", fmt::format("u|key8.{},50\n", Ymdh(day_, 7)));
  expect.AddTotal("u", "key8", Ymdh(day_, 7), 50);
  ASSERT_NO_FATAL_FAILURE(NextSecond());

  const int64_t from = closed * kSecondsPerDay, to = (day_ + 1) * kSecondsPerDay + 12 * kSecondsPerHour;
  const std::string id = Delete(fmt::format("ns=u&from={}&to={}", from, to));
  ASSERT_FALSE(id.empty());
  expect.Forget("u", from, to);
  ASSERT_NO_FATAL_FAILURE(NextSecond());

  ASSERT_NO_FATAL_FAILURE(IncrThroughApi(IncrLine(&expect, "u", "key2", closed, 5, 11)));
  ASSERT_NO_FATAL_FAILURE(WaitForLateLines(3));
  Queue("after.csv", fmt::format("u|key8.{},60\n", Ymdh(day_, 7)));
  expect.AddTotal("u", "key8", Ymdh(day_, 7), 60);
  SendRealtimeLines({fmt::format("u|key1.{},4", Ymdh(day_ + 1, 3))});
  expect.AddTotal("u", "key1", Ymdh(day_ + 1, 3), 4);

  ASSERT_NO_FATAL_FAILURE(SealLateData());
  RotateAll(day_ + 2);
  std::string out;
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_EQ(HourlyClicks("key8"), ExpectedHours(expect, "key8", day_));
  EXPECT_TRUE(WaitFor([&] { return Status(1, id).value("physical", false); })) << Status(1, id).dump();
}

// A deletion made while a rebuild is under way (its day exported and its
// generation built, not yet deployed): the generation deployed without it
// still answers without the deleted hours, and the next one folds it in.
TEST_F(DeleteFoldIntegration, ADeletionDuringARebuildIsFoldedByTheNextOne) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(51, 300, &expect));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));  // api-0 runs from SetUp
  PutRandomDay(day_ + 1, 52, 300, &expect);
  RotateAll(day_ + 2);
  std::string out;
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;  // day_+1 exported, generation 2 built

  const int64_t from = day_ * kSecondsPerDay + 20 * kSecondsPerHour;
  const int64_t to = (day_ + 1) * kSecondsPerDay + 6 * kSecondsPerHour;
  const std::string id = Delete(fmt::format("ns=u&key=key7&from={}&to={}", from, to));
  ASSERT_FALSE(id.empty());
  const std::set<std::string> keys = {"key7"};
  expect.Forget("u", from, to, &keys);

  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;  // deploys generation 2, built before the deletion
  EXPECT_EQ(ServedGeneration(0), 2);
  EXPECT_EQ(Status(0, id).value("folded_into", uint64_t{1}), 0u);
  EXPECT_EQ(HourlyClicks("key7"), ExpectedHours(expect, "key7", day_));

  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 3);
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_EQ(Status(1, id).value("folded_into", uint64_t{0}), 3u);
  EXPECT_EQ(HourlyClicks("key7"), ExpectedHours(expect, "key7", day_));
}

// A rebuild stopped after it built the generation that folds a deletion in
// (as if killed before its deploy): the next run deploys that generation as
// built, and the archive is the oracle's; the deletion is folded once.
TEST_F(DeleteFoldIntegration, ARebuildStoppedAfterItsBuildDeploysTheFoldOnTheNextRun) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(61, 300, &expect));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));  // api-0 runs from SetUp
  const int64_t from = day_ * kSecondsPerDay + 2 * kSecondsPerHour, to = from + 10 * kSecondsPerHour;
  const std::string id = Delete(fmt::format("ns=u&key=key2&from={}&to={}", from, to));
  ASSERT_FALSE(id.empty());
  const std::set<std::string> keys = {"key2"};
  expect.Forget("u", from, to, &keys);
  PutRandomDay(day_ + 1, 62, 300, &expect);
  RotateAll(day_ + 2);
  std::string out;
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1);
  EXPECT_EQ(HourlyClicks("key2"), ExpectedHours(expect, "key2", day_));
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 2);
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_EQ(Status(0, id).value("folded_into", uint64_t{0}), 2u);
  EXPECT_TRUE(WaitFor([&] { return Status(0, id).value("physical", false); })) << Status(0, id).dump();
  EXPECT_EQ(HourlyClicks("key2"), ExpectedHours(expect, "key2", day_));
}

// With no API node to say which deletions exist, a run exports and builds
// nothing (a generation without one could not take it out later) and says why; once
// one answers, the rerun folds the day and the deletion.
TEST_F(DeleteFoldIntegration, NoApiNodeAnsweringBuildsNothing) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(71, 200, &expect));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  const int64_t from = day_ * kSecondsPerDay, to = from + 6 * kSecondsPerHour;
  ASSERT_FALSE(Delete(fmt::format("ns=u&key=key1&from={}&to={}", from, to)).empty());
  const std::set<std::string> keys = {"key1"};
  expect.Forget("u", from, to, &keys);
  PutRandomDay(day_ + 1, 72, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(cluster_.Stop(testing::ApiMemberName(0)), 0);
  ASSERT_EQ(cluster_.Stop(testing::ApiMemberName(1)), 0);
  auto exports_started = [&] {
    std::vector<uint64_t> started;
    for (int shard = 0; shard < kShards; ++shard) {
      HttpResponse stats = Admin("GET", realtime_ports_[shard], "/stats");
      EXPECT_EQ(stats.status_code, 200) << stats.body;
      started.push_back(nlohmann::json::parse(stats.body)["data"]["realtime"].value("exports_started", uint64_t{0}));
    }
    return started;
  };
  const std::vector<uint64_t> started_before = exports_started();
  std::string out;
  EXPECT_NE(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("no API node can say which deletions to fold in"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 1);
  // Nor was the day exported: sealed, it would take what the API nodes have
  // still to send as late data.
  EXPECT_EQ(exports_started(), started_before);
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 2);
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
}

// docs/operations.md's runbook "a bot burst on one link yesterday", run as
// written there: the link's two burst hours hidden at once (read on the other
// API node), gone from the archive after the next nightly run; its other
// hours and every other key kept.
TEST_F(DeleteFoldIntegration, TheBotBurstRunbookTakesOutTheBurst) {
  std::string block = RunbookBlock("### Runbook: a bot burst on one link yesterday");
  ASSERT_FALSE(block.empty());
  Expectation expect;
  const std::string link = "https://example.com/spring-sale?utm_source=newsletter";
  const StoredKeyPart key = StoreKeyPart(link);
  const std::map<int, int64_t> clicks = {{12, 3}, {13, 3}, {14, 500}, {15, 500}, {16, 3}, {17, 3}};  // the bot's two hours
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(31, 300, &expect, HashedKeyLines(link, day_, clicks, "US", &expect)));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  std::string out;

  const int64_t from = day_ * kSecondsPerDay + 14 * kSecondsPerHour, to = from + 2 * kSecondsPerHour;
  SetRunbookVariable(&block, "CONFIG", cluster_.config_path());
  SetRunbookVariable(&block, "LINK", link);
  SetRunbookVariable(&block, "FROM", FormatIsoTime(from));
  SetRunbookVariable(&block, "TO", FormatIsoTime(to));
  ASSERT_EQ(RunRunbook(block, &out), 0) << block << "\n" << out;
  const std::set<std::string> keys = {key.stored};
  expect.Forget("u", from, to, &keys);
  EXPECT_EQ(HourlyClicks(link), ExpectedHours(expect, key.stored, day_));
  EXPECT_EQ(HourlyClicks(link).size(), 4u);

  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_EQ(HourlyClicks(link), ExpectedHours(expect, key.stored, day_));
}

// docs/operations.md's runbook "erase a user", run as written there: the
// person's key (stored hashed) over every hour, archived and realtime, and
// its lookup record; after the next nightly run no file the archive
// replicas serve and no realtime export holds the key, its hash or its value.
TEST_F(DeleteFoldIntegration, TheEraseRunbookLeavesNoTraceInTheServedFiles) {
  std::string block = RunbookBlock("### Runbook: erase a user");
  ASSERT_FALSE(block.empty());
  Expectation expect;
  const std::string person = "jane.doe+clicks@example.com";
  const StoredKeyPart key = StoreKeyPart(person);
  ASSERT_TRUE(key.hashed) << "the test is of a key kept by its hash, with a lookup record";
  const std::map<int, int64_t> clicks = {{3, 3}, {9, 9}, {20, 20}};  // all to be erased: not expected
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(41, 300, &expect, HashedKeyLines(person, day_, clicks, "DE", nullptr)));
  PutRandomDay(day_ + 1, 42, 300, &expect);
  SendRealtimeLines(HashedKeyLines(person, day_ + 1, clicks, "DE", nullptr));  // the ring's open day too
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  std::string out;

  SetRunbookVariable(&block, "CONFIG", cluster_.config_path());
  SetRunbookVariable(&block, "PERSON", person);
  ASSERT_EQ(RunRunbook(block, &out), 0) << block << "\n" << out;
  EXPECT_TRUE(HourlyClicks(person).empty());

  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect, /*without_uniques=*/true);
  EXPECT_TRUE(HourlyClicks(person).empty());
  const auto holds_trace = [&](const std::string& text) {
    return text.find(key.stored) != std::string::npos || text.find(person) != std::string::npos;
  };
  for (int shard = 0; shard < kShards; ++shard) {
    for (int replica = 0; replica < replicas_; ++replica) {
      auto file = ReadFileToString(ArchiveFile(shard, replica));
      ASSERT_TRUE(file.ok());
      EXPECT_FALSE(holds_trace(*file)) << ArchiveFile(shard, replica);
    }
  }
  int exports = 0;
  for (int shard = 0; shard < kShards; ++shard) {
    for (int64_t day : {day_, day_ + 1}) {
      HttpResponse exported = HttpGet(Loopback(realtime_ports_[shard]), "/export?date=" + FormatDate(day), 10000, kToken);
      if (exported.status_code != 200) continue;  // a day the ring no longer holds
      ++exports;
      EXPECT_FALSE(holds_trace(exported.body)) << "realtime shard " << shard << " " << FormatDate(day);
    }
  }
  EXPECT_GE(exports, kShards) << "the day the person was in realtime is exported again";
  // And the deletion says so (its id as the runbook makes it).
  std::string digest;
  ASSERT_EQ(RunCommand({"/bin/sh", "-c", "printf %s \"$0\" | md5sum | cut -c1-16", person}, &digest), 0) << digest;
  const std::string id = "erase-u-" + digest.substr(0, 16);
  EXPECT_TRUE(WaitFor([&] { return Status(0, id).value("physical", false); })) << Status(0, id).dump();
}

}  // namespace
}  // namespace clickatron::integration_delete_fold_test
