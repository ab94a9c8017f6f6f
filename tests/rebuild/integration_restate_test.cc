// `clickatron-rebuild restate` end to end on loopback (rebuild_cluster_fixture.h):
// a namespace's closed day replaced from a file, with what came before it
// (the archive, late data sealed before it, loads queued before it) taken
// out and what came after it added on top; the deployed archive files must
// equal the expectation computed here, day and span records included.
#include <gtest/gtest.h>

#include "clickatron/unique_sketch.h"
#include "rebuild_cluster_fixture.h"

namespace clickatron::integration_restate_test {
namespace {

class RestateIntegration : public RebuildIntegration {
 protected:
  // A restatement asks every API member to seal its late data: no member
  // that never runs (api-1 takes no increments of its own here).
  RestateIntegration() { loader_ = "api-1"; }

  // Lines of namespace u for hours of `day`: totals, country and referrer
  // subtotals (one referrer hashed, with its lookup) for `keys`.
  std::string RestatedLines(int64_t day, const std::vector<std::string>& keys, int base, Expectation* expect) {
    std::string data;
    const StoredKeyPart ref = StoreKeyPart("http://restated.example/");
    for (size_t k = 0; k < keys.size(); ++k) {
      for (int hour : {0, 7, 23}) {
        const std::string ymdh = Ymdh(day, hour);
        const int64_t value = base + static_cast<int64_t>(k) * 10 + hour;
        data += fmt::format("u|{}.{},{}\n", keys[k], ymdh, value);
        data += fmt::format("c.u|{}.NO.{},{}\n", keys[k], ymdh, value);
        data += fmt::format("r.u|{}.{}.{},{}\n", keys[k], ref.stored, ymdh, value);
        expect->AddTotal("u", keys[k], ymdh, value);
        expect->AddSubtotal("c", "u", keys[k], "NO", ymdh, value);
        expect->AddSubtotal("r", "u", keys[k], ref.stored, ymdh, value);
      }
    }
    data += fmt::format("l|{},{}\n", ref.stored, "http://restated.example/");
    expect->AddLookup(ref.stored, "http://restated.example/");
    return data;
  }
  // Day day_ archived as generation 1, and both API nodes up (the
  // restatement seals their late data).
  void ArchiveDayWithApisUp(uint32_t seed, int increments, Expectation* expect) {
    ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(seed, increments, expect));
    ASSERT_NO_FATAL_FAILURE(StartApi(0));
    ASSERT_NO_FATAL_FAILURE(StartApi(1));
  }
  // What restating day_ of namespace u takes out of the expectation.
  void ForgetRestatedDay(Expectation* expect, const std::set<std::string>* keys = nullptr) const {
    expect->Forget("u", day_ * kSecondsPerDay, (day_ + 1) * kSecondsPerDay, keys);
  }
  std::string WriteData(const std::string& name, const std::string& data) {
    const std::string path = cluster_ / name;
    EXPECT_TRUE(WriteFileAtomically(path, data).ok());
    return path;
  }
  int Restate(const std::vector<std::string>& extra, std::string* out) {
    std::vector<std::string> args = {"restate", "--config", cluster_.config_path(), "--ns", "u",
                                     "--from",  FormatDate(day_), "--to", FormatDate(day_)};
    args.insert(args.end(), extra.begin(), extra.end());
    return Rebuild(args, out);
  }
  // The text of a sketch of visitors `first`..`last` (hashed by their number).
  static std::string Visitors(uint64_t first, uint64_t last) {
    UniqueSketch sketch;
    for (uint64_t v = first; v <= last; ++v) sketch.Add(v * 0x9E3779B97F4A7C15ull);
    return sketch.ToText();
  }
  // data of GET target on api-0, as JSON (null when it did not answer 200).
  nlohmann::json Read(const std::string& target) {
    HttpResponse r = HttpGet(cluster_.Api(0), target, 20000);
    EXPECT_EQ(r.status_code, 200) << target << " " << r.body;
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("data") ? j["data"] : nlohmann::json();
  }
  // Queue entries with a queued.done marker.
  int QueuedEntries() {
    int n = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(cluster_ / "work/queue", ec)) {
      n += FileExists(entry.path().string() + "/queued.done") ? 1 : 0;
    }
    return n;
  }
  // Namespace v on `day`: never restated with u.
  void PutOtherNamespace(int64_t day, Expectation* expect) {
    std::vector<std::string> lines;
    for (int hour = 0; hour < 24; hour += 5) {
      lines.push_back(fmt::format("v|other.{},{}", Ymdh(day, hour), hour + 1));
      lines.push_back(fmt::format("c.v|other.SE.{},{}", Ymdh(day, hour), hour + 1));
      expect->AddTotal("v", "other", Ymdh(day, hour), hour + 1);
      expect->AddSubtotal("c", "v", "other", "SE", Ymdh(day, hour), hour + 1);
    }
    SendRealtimeLines(lines);
  }
};

// The whole contract of one nightly run: the archive's day, late data sealed
// before the restatement and a load queued before it are replaced; a load
// queued after it and late data taken after it add on top; another namespace,
// another day of the same namespace and the next realtime day are untouched.
TEST_F(RestateIntegration, ReplacesADayAndKeepsWhatCameAfterIt) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 1, 400, &expect);
  PutOtherNamespace(day_, &expect);
  RotateAll(day_ + 1);
  std::string out;
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  ExpectArchiveEquals(expect);
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));

  // Before the restatement: late data for the day, and a load with an hour
  // of the day (superseded) and an hour three days earlier (outside the range: kept).
  const std::string late_before = WriteLateFile(0, 1700000000, day_, 5, 60, nullptr);
  const std::string load_before = WriteData(
      "before.csv", fmt::format("u|histA.{},3\nu|histA.{},4\n", Ymdh(day_, 5), Ymdh(day_ - 3, 5)));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), load_before}, &out), 0) << out;

  ForgetRestatedDay(&expect);
  expect.AddTotal("u", "histA", Ymdh(day_ - 3, 5), 4);
  const std::string restated = WriteData("restated.csv", RestatedLines(day_, {"key1", "key2", "fresh"}, 1000, &expect));
  ASSERT_EQ(Restate({restated}, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1);  // queued, nothing served changed

  // After it: a load and late data (on the other API node, sealed after the
  // restatement sealed the late files) for the same day add on top.
  const std::string load_after = WriteData("after.csv", fmt::format("u|key1.{},5\n", Ymdh(day_, 7)));
  expect.AddTotal("u", "key1", Ymdh(day_, 7), 5);
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), load_after}, &out), 0) << out;
  const std::string late_after = WriteLateFile(1, 1900000000, day_, 6, 30, &expect);

  PutRandomDay(day_ + 1, 2, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  // Both late files folded once and marked done; every queue entry folded.
  EXPECT_TRUE(FileExists(DonePath(late_before)));
  EXPECT_TRUE(FileExists(DonePath(late_after)));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cluster_ / "work/queue", ec)) {
    if (!entry.is_directory()) continue;
    EXPECT_TRUE(FileExists(entry.path().string() + "/folded.done")) << entry.path();
  }
  // The next run has nothing of it to fold again.
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ExpectArchiveEquals(expect);
}

// --keys-in-file replaces only the keys its files name; --now deploys at
// once; the same restatement again changes nothing.
TEST_F(RestateIntegration, KeysInFileReplacesOnlyItsKeysAndARerunIsTheSame) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveDayWithApisUp(3, 400, &expect));
  std::string out;

  const std::set<std::string> keys = {"key3", "key5"};
  ForgetRestatedDay(&expect, &keys);
  const std::string restated = WriteData("keys.csv", RestatedLines(day_, {"key3", "key5"}, 500, &expect));
  ASSERT_EQ(Restate({"--keys-in-file", "--now", restated}, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  ASSERT_EQ(Restate({"--keys-in-file", "--now", restated}, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 3);
}

// A day older than every day realtime holds is closed, archive or not:
// history put in by bulk loads before any nightly run can be restated.
TEST_F(RestateIntegration, ADayOlderThanTheRingIsRestatedWithNoNightlyRunYet) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  Expectation expect;
  const int64_t old_day = day_ - 40;
  const std::string old_lines = WriteData("old.csv", RestatedLines(old_day, {"key1", "key2", "key3", "key4", "key5", "key6"}, 10, &expect));
  ASSERT_EQ(Rebuild({"restate", "--config", cluster_.config_path(), "--ns", "u", "--from", FormatDate(old_day),
                     "--to", FormatDate(old_day), "--now", old_lines},
                    &out),
            0)
      << out;
  ExpectArchiveEquals(expect);
}

// Refused before anything is queued: an open day, a line of another
// namespace or outside the range (named by file and line), an API node that
// cannot seal its late data.
TEST_F(RestateIntegration, RefusesOpenDaysStrayLinesAndAnUnsealedApiNode) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  Expectation unused;
  const std::string good = WriteData("good.csv", RestatedLines(day_, {"key1"}, 10, &unused));
  // No archive yet: every day is open.
  EXPECT_NE(Restate({good}, &out), 0);
  EXPECT_NE(out.find("DAY_OPEN"), std::string::npos) << out;
  EXPECT_NE(out.find(FormatDate(day_) + " is still open"), std::string::npos) << out;

  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(4, 100, &expect));
  // The next day is still in the realtime ring.
  EXPECT_NE(Rebuild({"restate", "--config", cluster_.config_path(), "--ns", "u", "--from", FormatDate(day_), "--to",
                     FormatDate(day_ + 1), good},
                    &out),
            0);
  EXPECT_NE(out.find(FormatDate(day_ + 1) + " is still open"), std::string::npos) << out;

  const std::string other_ns =
      WriteData("other-ns.csv", fmt::format("u|key1.{},1\nv|key1.{},1\n", Ymdh(day_, 1), Ymdh(day_, 1)));
  EXPECT_NE(Restate({other_ns}, &out), 0);
  EXPECT_NE(out.find("RESTATE_OTHER_NAMESPACE"), std::string::npos) << out;
  EXPECT_NE(out.find(other_ns + ":2:"), std::string::npos) << out;
  const std::string outside = WriteData(
      "outside.csv", fmt::format("u|key1.{},1\nc.u|key1.US.{},1\nu|key1.{},1\n", Ymdh(day_, 1), Ymdh(day_, 2),
                                 Ymdh(day_ + 1, 0)));
  EXPECT_NE(Restate({outside}, &out), 0);
  EXPECT_NE(out.find("RESTATE_OUT_OF_RANGE"), std::string::npos) << out;
  EXPECT_NE(out.find(outside + ":3:"), std::string::npos) << out;

  cluster_.Kill(testing::ApiMemberName(1));
  EXPECT_NE(Restate({good}, &out), 0);
  EXPECT_NE(out.find("api-1"), std::string::npos) << out;
  EXPECT_NE(out.find("/late/seal"), std::string::npos) << out;

  EXPECT_EQ(QueuedEntries(), 0);
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 1);
}

// Reads answer what the restatement says, in three zones: clicks of a key
// over the days around the restated one, and its unique visitors (total and
// per subtotal value), which replace the archive's, not add to them.
TEST_F(RestateIntegration, ReadsAnswerTheRestatedClicksAndUniquesInThreeZones) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 11, 300, &expect);
  // Visitors come with clicks: a reader finds a key's unique hours by the
  // hours its total has.
  std::vector<std::string> uniques;
  for (int hour : {3, 4, 20}) {
    uniques.push_back(fmt::format("u|key1.{},50", Ymdh(day_, hour)));
    expect.AddTotal("u", "key1", Ymdh(day_, hour), 50);
    uniques.push_back(fmt::format("~u|key1.{},{}", Ymdh(day_, hour), Visitors(1, 40)));
    uniques.push_back(fmt::format("~c.u|key1.US.{},{}", Ymdh(day_, hour), Visitors(1, 25)));
  }
  SendRealtimeLines(uniques);
  RotateAll(day_ + 1);
  std::string out;
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  const int64_t ref = day_ * kSecondsPerDay;
  // Before: the archive's visitors.
  EXPECT_EQ(Read(fmt::format("/uniques?ns=u&key=key1&unit=day&units=1&unit_reference_ts={}&rollup=true", ref))
                ["uniques"],
            40);

  ForgetRestatedDay(&expect);
  std::string data = RestatedLines(day_, {"key1"}, 300, &expect);
  data += fmt::format("~u|key1.{},{}\n", Ymdh(day_, 7), Visitors(100, 102));
  data += fmt::format("~u|key1.{},{}\n", Ymdh(day_, 23), Visitors(101, 104));
  data += fmt::format("~c.u|key1.NO.{},{}\n", Ymdh(day_, 23), Visitors(200, 201));
  ASSERT_EQ(Restate({"--now", WriteData("restated.csv", data)}, &out), 0) << out;
  ExpectArchiveEquals(expect, /*without_uniques=*/true);  // counters, day and span records
  for (int zone : {-5, 0, 9}) {
    // Three days around the restated one, whatever the zone's day edges.
    const std::string window = fmt::format("unit=day&units=3&timezone={}&unit_reference_ts={}&rollup=true", zone,
                                           ref + kSecondsPerDay);
    EXPECT_EQ(Read("/clicks?ns=u&key=key1&" + window)["clicks"], expect.Clicks("u|key1")) << zone;
    EXPECT_EQ(Read("/uniques?ns=u&key=key1&" + window)["uniques"], 5) << zone;  // 100..104
    EXPECT_EQ(Read("/uniques?ns=u&key=key1&sns=c&skey=US&" + window)["uniques"], 0) << zone;
    EXPECT_EQ(Read("/uniques?ns=u&key=key1&sns=c&skey=NO&" + window)["uniques"], 2) << zone;
  }
}

// The first read after `restate --now` returns is of the new generation,
// also for a window of archived days alone (no realtime answer to say a
// generation was deployed) whose answer the API node keeps: the rebuild's
// "deployed" word tells it (a probe read the old counts for 0.3 s).
class RestateWithReadCache : public RestateIntegration {
 protected:
  RestateWithReadCache() { read_cache_mb_ = 16; }
  // A figure of api-0's /stats data.read.
  int64_t ApiReadFigure(const std::string& name) {
    HttpResponse r = HttpGet(cluster_.Api(0), "/stats");
    nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() ? j["data"]["read"].value(name, int64_t{-1}) : -1;
  }
};

TEST_F(RestateWithReadCache, TheFirstReadAfterItReturnsReadsTheNewGeneration) {
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  // History older than the ring, put in with no nightly run yet: realtime
  // is told of no generation, and reads of those days ask it nothing.
  const int64_t old_day = day_ - 40;
  const auto restate_now = [&](const std::string& lines) {
    std::string out;
    EXPECT_EQ(Rebuild({"restate", "--config", cluster_.config_path(), "--ns", "u", "--from", FormatDate(old_day),
                       "--to", FormatDate(old_day), "--now", WriteData("old.csv", lines)},
                      &out),
              0)
        << out;
  };
  Expectation expect;
  restate_now(RestatedLines(old_day, {"key1"}, 10, &expect));
  const std::string target = fmt::format("/clicks?ns=u&key=key1&unit=day&units=1&unit_reference_ts={}&rollup=true",
                                         old_day * kSecondsPerDay);
  for (int read = 0; read < 3; ++read) EXPECT_EQ(Read(target)["clicks"], expect.Clicks("u|key1"));
  EXPECT_GT(ApiReadFigure("archive_cache_hits"), 0) << "the answer was not kept: nothing is tested";
  expect.Forget("u", old_day * kSecondsPerDay, (old_day + 1) * kSecondsPerDay);
  restate_now(RestatedLines(old_day, {"key1"}, 1000, &expect));
  EXPECT_EQ(Read(target)["clicks"], expect.Clicks("u|key1"));
}

// A restatement built into a generation that is not deployed (the run
// stopped there) is deployed by the next run as built: once, exactly.
TEST_F(RestateIntegration, ABuiltButUndeployedRestatementIsDeployedOnce) {
  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveDayWithApisUp(7, 300, &expect));
  std::string out;
  ForgetRestatedDay(&expect);
  const std::string restated = WriteData("restated.csv", RestatedLines(day_, {"key9"}, 70, &expect));
  ASSERT_EQ(Restate({restated}, &out), 0) << out;
  PutRandomDay(day_ + 1, 8, 100, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
}

// docs/operations.md's runbook "restate last Tuesday from the raw logs", run
// as written there: its block of shell with CONFIG, DAY and LOG set to this
// cluster's; the archive then equals the log's clicks for the day.
TEST_F(RestateIntegration, TheRunbookRestatesADayFromTheRawLog) {
  std::string block = RunbookBlock("### Runbook: restate last Tuesday from the raw logs");
  ASSERT_FALSE(block.empty());

  Expectation expect;
  ASSERT_NO_FATAL_FAILURE(ArchiveDayWithApisUp(21, 300, &expect));
  std::string out;

  ForgetRestatedDay(&expect);
  const std::vector<std::string> links = {"key1", "key2", "https://example.com/a/long/link?utm=1"};
  const std::vector<std::string> countries = {"US", "DE", "JP"};
  std::string log;
  for (int i = 0; i < 30; ++i) {
    const int64_t time = day_ * kSecondsPerDay + i * 2711 % kSecondsPerDay;
    const std::string& link = links[static_cast<size_t>(i) % links.size()];
    const std::string& country = countries[static_cast<size_t>(i / 3) % countries.size()];
    log += fmt::format("{}\t{}\t{}\n", time, link, country);
    const StoredKeyPart key = StoreKeyPart(link);
    const std::string ymdh = *YmdhFromUnix(time);
    expect.AddTotal("u", key.stored, ymdh, 1);
    expect.AddSubtotal("c", "u", key.stored, country, ymdh, 1);
    if (key.hashed) expect.AddLookup(key.stored, link);
  }
  const std::string log_path = WriteData("clicks.tsv", log);
  SetRunbookVariable(&block, "CONFIG", cluster_.config_path());
  SetRunbookVariable(&block, "DAY", FormatDate(day_));
  SetRunbookVariable(&block, "LOG", log_path);
  ASSERT_EQ(RunRunbook(block, &out), 0) << block << "\n" << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
}

}  // namespace
}  // namespace clickatron::integration_restate_test
