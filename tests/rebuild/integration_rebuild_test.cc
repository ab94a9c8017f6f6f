// End to end on loopback (rebuild_cluster_fixture.h): the nightly run, late
// data, bulk loads, failures and reruns; the deployed archive files must
// equal an expectation computed from the raw increments.
#include <gtest/gtest.h>

#include <zlib.h>

#include "rebuild_cluster_fixture.h"

namespace clickatron {
namespace {

TEST_F(RebuildIntegration, DayThenRerunThenSecondDayWithLateData) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 1, 800, &expect);
  RotateAll(day_ + 1);  // day_ is now Yesterday
  // Before: the realtime day cannot be cleared.
  EXPECT_EQ(Admin("POST", realtime_ports_[0], "/clear?date=" + FormatDate(day_)).status_code, 409);

  std::string out;
  // Today and tomorrow are not over: refused as such, before anything is
  // exported (not as an export of another day failing).
  for (int64_t not_over : {day_ + 1, day_ + 2}) {
    EXPECT_NE(RunDay(not_over, &out), 0) << out;
    EXPECT_NE(out.find("DAY_STILL_CURRENT"), std::string::npos) << out;
    EXPECT_NE(out.find(FormatDate(not_over) + " is not over"), std::string::npos) << out;
  }
  // A day older than the ring: refused as such, and nothing begun for it
  // (the work dir would list it "in progress" for good).
  EXPECT_NE(RunDay(day_ - 400, &out), 0) << out;
  EXPECT_NE(out.find("DAY_NOT_IN_RING"), std::string::npos) << out;
  EXPECT_NE(out.find("is older than every day realtime shard"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(cluster_ / ("work/days/" + FormatDate(day_ - 400)))) << out;
  EXPECT_EQ(ServedGeneration(0), 0);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) {
    EXPECT_EQ(ServedGeneration(i), 1) << "replica " << i;
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(i)));
    ASSERT_TRUE(manifest.ok());
    EXPECT_EQ(manifest->last_day, FormatDate(day_));
    EXPECT_EQ(manifest->records, expect.ShardLines(i).size());
    EXPECT_TRUE(FileExists(cluster_ / fmt::format("backup/gen-1/shard-{}.csv.gz", i)));
  }
  // The realtime day is exported: it may be cleared now.
  for (int i = 0; i < kShards; ++i) {
    HttpResponse r = Admin("POST", realtime_ports_[i], "/clear?date=" + FormatDate(day_));
    EXPECT_EQ(r.status_code, 200) << r.body;
  }

  // A rerun of a finished day is a no-op: same files, same generation. It
  // sweeps what a rebuild killed while writing left under a temporary name
  // (NAME.tmp.PID), and nothing else.
  const std::vector<std::string> stale = {"work/gen/1/plan.json.tmp.999999",
                                          "work/days/" + FormatDate(day_) + "/complete.done.tmp.999998",
                                          "work/lock.tmp.12"};
  const std::vector<std::string> kept = {"work/gen/1/notes.tmp.txt", "work/gen/1/plan.json.tmp.",
                                          "work/gen/1/tasks/merge-0/out.csv.tmp.77"};
  for (const std::string& path : stale) testing::WriteAll(cluster_ / path, "half");
  for (const std::string& path : kept) testing::WriteAll(cluster_ / path, "mine");
  const auto before = FileLines(ArchiveFile(0));
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  EXPECT_EQ(FileLines(ArchiveFile(0)), before);
  EXPECT_EQ(ServedGeneration(0), 1);
  for (const std::string& path : stale) EXPECT_FALSE(std::filesystem::exists(cluster_ / path)) << path;
  for (const std::string& path : kept) EXPECT_TRUE(std::filesystem::exists(cluster_ / path)) << path;
  // The day before was still in the ring unexported (the first Yesterday):
  // it was folded with day_, so running it now has nothing to do.
  ASSERT_EQ(RunDay(day_ - 1, &out), 0) << out;
  EXPECT_NE(out.find("nothing to do"), std::string::npos) << out;
  // An earlier day than the archive's last_day, never in a generation, would
  // be counted twice if it had been: refused.
  EXPECT_NE(RunDay(day_ - 30, &out), 0);
  EXPECT_NE(out.find("ALREADY_ARCHIVED"), std::string::npos) << out;
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_NE(out.find(FormatDate(day_) + "  exported+sorted per realtime shard [xx]"), std::string::npos) << out;
  EXPECT_NE(out.find("COMPLETE"), std::string::npos) << out;
  EXPECT_NE(out.find("shard 0: generation 1"), std::string::npos) << out;

  // Day two, plus a sealed late-data file on api-0 holding more of day one,
  // fetched from api-0 over HTTP.
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  PutRandomDay(day_ + 1, 2, 400, &expect);
  ASSERT_TRUE(MakeDirs(LateDir(0)).ok());
  const std::string late = LateDir(0) + "/" + LateFileName(1700000000, true);
  {
    auto writer = FramedLogWriter::Open(late);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    std::string payload = FormatBatchHeader("api-0", 0, 7);
    for (int h = 0; h < 3; ++h) {
      payload += fmt::format("u|key1.{},100\n", Ymdh(day_, h));
      expect.AddTotal("u", "key1", Ymdh(day_, h), 100);
    }
    payload += fmt::format("u|latecomer.{},5\n", Ymdh(day_, 23));
    expect.AddTotal("u", "latecomer", Ymdh(day_, 23), 5);
    // A late subtotal of day one adds to its day record in the archive.
    payload += fmt::format("c.u|key1.BR.{},100\n", Ymdh(day_, 2));
    expect.AddSubtotal("c", "u", "key1", "BR", Ymdh(day_, 2), 100);
    ASSERT_TRUE((*writer)->Append(payload).ok());
    ASSERT_TRUE((*writer)->Sync().ok());
    ASSERT_TRUE((*writer)->Close().ok());
  }
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) {
    EXPECT_EQ(ServedGeneration(i), 2);
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(i)));
    ASSERT_TRUE(manifest.ok());
    EXPECT_EQ(manifest->last_day, FormatDate(day_ + 1));
    EXPECT_EQ(manifest->late_inputs, std::vector<std::string>{"api-0/late-1700000000.sealed"});
  }
  // Marked done on api-0 through POST /late/done; api-1 was down: named, skipped.
  EXPECT_FALSE(FileExists(late));
  EXPECT_TRUE(FileExists(DonePath(late)));
  EXPECT_NE(out.find("API member api-1 skipped this run"), std::string::npos) << out;
}

// Two API nodes each have a late file of the same name (both created in the
// same second): both are folded, under ids that name their node, and each
// is marked done on its own node. The next run folds neither again.
TEST_F(RebuildIntegration, LateFilesOfTheSameNameOnTwoApiNodesAreBothFoldedOnce) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(8, 200, &expect));
  const std::string a = WriteLateFile(0, 1700000000, day_, 10, 60, &expect);
  const std::string b = WriteLateFile(1, 1700000000, day_, 11, 90, &expect);
  ASSERT_NE(ReadFileToString(a).value(), ReadFileToString(b).value());
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  PutRandomDay(day_ + 1, 9, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  const std::vector<std::string> both = {"api-0/late-1700000000.sealed", "api-1/late-1700000000.sealed"};
  for (int i = 0; i < kShards; ++i) EXPECT_EQ(LateInputs(i), both) << "shard " << i;
  auto plan = nlohmann::json::parse(ReadFileToString(cluster_ / "work/gen/2/plan.json").value());
  EXPECT_EQ(plan["late_files"], nlohmann::json(both));
  // The fetched copies, one per node, byte for byte.
  EXPECT_EQ(ReadFileToString(cluster_ / "work/gen/2/late/api-0/late-1700000000.sealed").value(),
            ReadFileToString(DonePath(a)).value());
  EXPECT_EQ(ReadFileToString(cluster_ / "work/gen/2/late/api-1/late-1700000000.sealed").value(),
            ReadFileToString(DonePath(b)).value());
  EXPECT_FALSE(FileExists(a));
  EXPECT_FALSE(FileExists(b));

  // The next night: nothing late is left; both drop off late_inputs.
  PutRandomDay(day_ + 2, 12, 100, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) EXPECT_TRUE(LateInputs(i).empty()) << "shard " << i;
}

// POST /late/done fails after the deploy (api-0 cannot rename the file: a
// directory holds its .done name). The run still finishes, with a warning:
// the file is in the deployed generation and still sealed on api-0, and the
// next run (api-0 fixed) marks it done without folding it again. A file
// whose done mark was lost is never folded twice while the manifests list it.
TEST_F(RebuildIntegration, ALateFileNotMarkedDoneNeitherStopsTheNightNorIsFoldedTwice) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(13, 200, &expect));
  ASSERT_NO_FATAL_FAILURE(StartApi(0));
  const std::string late = WriteLateFile(0, 1700000500, day_, 14, 90, &expect);
  ASSERT_TRUE(MakeDirs(DonePath(late)).ok());  // POST /late/done now fails on api-0
  PutRandomDay(day_ + 1, 15, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("LATE_DONE_FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find("was not marked done on its API node"), std::string::npos) << out;
  // Deployed with the late data in it, once; the file is still sealed there.
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  EXPECT_TRUE(FileExists(late));
  EXPECT_TRUE(FileExists(cluster_ / "work/gen/2/finished.done"));

  // The next night (api-0 fixed): marks it done, folds it no second time.
  std::filesystem::remove(DonePath(late));
  PutRandomDay(day_ + 2, 16, 100, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 3);
  EXPECT_FALSE(FileExists(late));
  EXPECT_TRUE(FileExists(DonePath(late)));

  // Its done mark lost (renamed back by hand): the deployed manifests still
  // list it, so the next run does not fold it again, and marks it done.
  ASSERT_EQ(::rename(DonePath(late).c_str(), late.c_str()), 0);
  PutRandomDay(day_ + 3, 17, 100, &expect);
  RotateAll(day_ + 4);
  ASSERT_EQ(RunDay(day_ + 3, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 4);
  for (int i = 0; i < kShards; ++i) EXPECT_EQ(LateInputs(i), std::vector<std::string>{"api-0/late-1700000500.sealed"});
  EXPECT_FALSE(FileExists(late));
  EXPECT_TRUE(FileExists(DonePath(late)));
}

// An API node down during the run: the run deploys without its late files
// (a warning names it) and the next run, with it back, folds them.
TEST_F(RebuildIntegration, AnApiNodeDownDuringTheRunHasItsLateDataFoldedNextRun) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(17, 200, &expect));
  const std::string up = WriteLateFile(0, 1700000000, day_, 18, 60, &expect);
  // api-1's file: not in the expectation until the run that can fetch it.
  const std::string down = WriteLateFile(1, 1700000001, LatePayloads(1, day_, 19, 60, nullptr));
  ASSERT_NO_FATAL_FAILURE(StartApi(0));  // api-1 is not running
  PutRandomDay(day_ + 1, 20, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("API member api-1 skipped this run"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) EXPECT_EQ(LateInputs(i), std::vector<std::string>{"api-0/late-1700000000.sealed"});
  EXPECT_TRUE(FileExists(DonePath(up)));
  EXPECT_TRUE(FileExists(down));

  ASSERT_NO_FATAL_FAILURE(StartApi(1));
  (void)LatePayloads(1, day_, 19, 60, &expect);  // now it counts
  PutRandomDay(day_ + 2, 21, 100, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_EQ(out.find("API member api-1 skipped"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) EXPECT_EQ(LateInputs(i), std::vector<std::string>{"api-1/late-1700000001.sealed"});
  EXPECT_TRUE(FileExists(DonePath(down)));
}

TEST_F(RebuildIntegration, BulkLoadQueuesNowAndRejectsBadFiles) {
  Expectation expect;
  // History from 2020, any order, duplicates, one bad line per file, gzip too.
  const int64_t old_day = *ParseDate("2020-02-29");
  std::vector<std::string> plain, packed;
  for (int i = 0; i < 300; ++i) {
    const std::string ymdh = Ymdh(old_day - i % 5, i % 24);
    const std::string line = fmt::format("u|hist{}.{},{}", i % 7, ymdh, 1 + i % 3);
    (i % 2 ? plain : packed).push_back(line);
    expect.AddTotal("u", fmt::format("hist{}", i % 7), ymdh, 1 + i % 3);
  }
  plain.push_back(plain.front());  // a duplicate: counts sum
  expect.AddTotal("u", "hist1", Ymdh(old_day - 1, 1), 2);
  plain.insert(plain.begin() + 10, "u|hist1.c3p1");  // bad: no value (line 11)
  {
    std::ofstream f(cluster_ / "history.csv");
    for (const auto& l : plain) f << l << "\n";
  }
  {
    gzFile gz = gzopen((cluster_ / "history.csv.gz").c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    for (const auto& l : packed) gzprintf(gz, "%s\n", l.c_str());
    gzputs(gz, "not a record\n");  // bad (line 151)
    gzclose(gz);
  }
  std::string out;
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "history.csv", cluster_ / "history.csv.gz"}, &out),
            0)
      << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 1);
  // The rejects name file and line.
  std::string rejects;
  for (const auto& entry : std::filesystem::directory_iterator(cluster_ / "work/queue")) {
    if (FileExists(entry.path().string() + "/rejects.txt")) {
      rejects = ReadFileToString(entry.path().string() + "/rejects.txt").value();
    }
  }
  EXPECT_NE(rejects.find(cluster_ / "history.csv:11:"), std::string::npos) << rejects;
  EXPECT_NE(rejects.find(cluster_ / "history.csv.gz:151:"), std::string::npos) << rejects;

  // Too many bad lines (more than 10%): the load fails, nothing is queued.
  {
    std::ofstream f(cluster_ / "junk.csv");
    for (int i = 0; i < 10; ++i) f << "u|junk.c3p1,1\n";
    for (int i = 0; i < 5; ++i) f << "junk\n";
  }
  EXPECT_NE(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "junk.csv"}, &out), 0);
  EXPECT_NE(out.find("TOO_MANY_BAD_LINES"), std::string::npos) << out;
  // A bound for one load: the cluster file allows 10%, this load none, and
  // history.csv has one bad line: refused, nothing queued or served. (It was
  // loaded above: --force, or it would be refused as loaded already.)
  EXPECT_NE(Rebuild({"load", "--config", cluster_.config_path(), "--force", "--max-bad-line-ratio", "0", "--now",
                     cluster_ / "history.csv"},
                    &out),
            0);
  EXPECT_NE(out.find("TOO_MANY_BAD_LINES"), std::string::npos) << out;
  EXPECT_NE(out.find("more than the 0.0000% allowed"), std::string::npos) << out;
  EXPECT_NE(Rebuild({"load", "--config", cluster_.config_path(), "--max-bad-line-ratio", "1.5", cluster_ / "history.csv"}, &out), 0);
  EXPECT_EQ(ServedGeneration(0), 1);
  // Archive-format history is taken in as well (and normalised).
  {
    std::ofstream f(cluster_ / "history-archive.csv");
    f << "u|hist1," << Ymdh(old_day - 9, 3) << ":0007 " << Ymdh(old_day - 9, 4) << ":1\n";
    f << "c.u|hist1." << Ymdh(old_day - 9, 3) << ",JP:2 US:5\n";
  }
  expect.AddTotal("u", "hist1", Ymdh(old_day - 9, 3), 7);
  expect.AddTotal("u", "hist1", Ymdh(old_day - 9, 4), 1);
  expect.AddSubtotal("c", "u", "hist1", "JP", Ymdh(old_day - 9, 3), 2);
  expect.AddSubtotal("c", "u", "hist1", "US", Ymdh(old_day - 9, 3), 5);
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--format", "archive", "--now", cluster_ / "history-archive.csv"},
                    &out),
            0)
      << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  // The same command run again after it was stopped between noting the load
  // folded and finishing generation 2 (its marker taken away here, where a
  // kill -9 would have left it missing): refused as loaded, and generation 2
  // is finished, not left "deployed, realtime not told yet" for the night.
  ASSERT_TRUE(std::filesystem::remove(cluster_ / "work/gen/2/finished.done"));
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  ASSERT_NE(out.find("unfinished generation 2"), std::string::npos) << out;
  EXPECT_NE(Rebuild({"load", "--config", cluster_.config_path(), "--format", "archive", "--now",
                     cluster_ / "history-archive.csv"},
                    &out),
            0);
  EXPECT_NE(out.find("ALREADY_LOADED"), std::string::npos) << out;
  EXPECT_TRUE(FileExists(cluster_ / "work/gen/2/finished.done"));
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_EQ(out.find("unfinished generation"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
  // Queued, not now; loaded a second time on purpose (--force).
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--force", cluster_ / "history.csv"}, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 2);  // nothing served changed
  ExpectArchiveEquals(expect);
  // The next day's run folds the queued load in (and only that one).
  for (const auto& l : plain) {
    if (l.find(',') == std::string::npos) continue;
    const size_t bar = l.find('|'), dot = l.find('.'), comma = l.find(',');
    expect.AddTotal("u", l.substr(bar + 1, dot - bar - 1), l.substr(dot + 1, comma - dot - 1),
                    std::stoll(l.substr(comma + 1)));
  }
  RotateAll(day_);
  PutRandomDay(day_, 3, 80, &expect);
  RotateAll(day_ + 1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(1), 3);
}

// A generation whose files lack day subtotal records of some days gets them
// for every day it holds on the next run, and says so in its manifests: files
// of hours only (built before day records, or brought in by hand), and files
// of the older rule (a record only for a day of two or more hours).
class RebuildDaySubtotalsMigration : public RebuildIntegration, public ::testing::WithParamInterface<bool> {};

TEST_P(RebuildDaySubtotalsMigration, AGenerationLackingDayRecordsGetsThemOnTheNextRun) {
  const bool two_hour_rule = GetParam();
  Expectation expect;
  std::string out;
  // Few increments over 40 keys: days of one hour and days of more.
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(6, 80, &expect));
  for (int i = 0; i < kShards; ++i) {
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(i)));
    ASSERT_TRUE(manifest.ok());
    EXPECT_TRUE(manifest->day_subtotals);
    EXPECT_TRUE(manifest->day_subtotals_every_day);
    // A day record's code (after the key's last '.') has 3 characters. Hours
    // only: drop every day record; the two-hour rule: those of one-hour days.
    const std::vector<std::string> lines = FileLines(ArchiveFile(i));
    const auto day_record = [](const std::string& key) {
      const size_t dot = key.rfind('.');
      return key.find('|') < dot && key.find('.') < key.find('|') && key.size() - dot - 1 == 3;
    };
    std::map<std::string, int> hours_of_day;
    for (const std::string& line : lines) {
      const std::string key = line.substr(0, line.find(','));
      if (key.find('|') < key.rfind('.') && key.find('.') < key.find('|') && !day_record(key)) {
        ++hours_of_day[key.substr(0, key.size() - 1)];
      }
    }
    std::string older;
    size_t dropped = 0, kept = 0;
    for (const std::string& line : lines) {
      const std::string key = line.substr(0, line.find(','));
      if (day_record(key) && (!two_hour_rule || hours_of_day[key] < 2)) {
        ++dropped;
        continue;
      }
      if (day_record(key)) ++kept;
      older += line + "\n";
    }
    EXPECT_GT(dropped, 0u);
    EXPECT_EQ(kept > 0, two_hour_rule);
    manifest->day_subtotals = two_hour_rule;
    manifest->day_subtotals_every_day = false;
    DescribeArchiveData(older, &*manifest);
    ASSERT_TRUE(WriteFileAtomically(ArchiveFile(i), older).ok());
    ASSERT_TRUE(WriteManifestAtomically(ManifestPathFor(ArchiveFile(i)), *manifest).ok());
    // The replica serves it; the rebuild's own copy of generation 1 no longer
    // matches, so it fetches the served one.
    HttpResponse reloaded = Admin("POST", archive_ports_[i], "/reload");
    ASSERT_EQ(reloaded.status_code, 200) << reloaded.body;
  }
  PutRandomDay(day_ + 1, 7, 300, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);  // both days' records, day one's made from its hours
  for (int i = 0; i < kShards; ++i) {
    auto manifest = ReadManifest(ManifestPathFor(ArchiveFile(i)));
    ASSERT_TRUE(manifest.ok());
    EXPECT_TRUE(manifest->day_subtotals);
    EXPECT_TRUE(manifest->day_subtotals_every_day);
    EXPECT_EQ(ServedGeneration(i), 2);
  }
}

INSTANTIATE_TEST_SUITE_P(OlderFiles, RebuildDaySubtotalsMigration, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "TwoHourRule" : "HoursOnly";
                         });

TEST_F(RebuildIntegration, FailedDeployKeepsOldGenerationAndDayThenRerunDeploys) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(4, 200, &expect));
  const Expectation first = expect;

  PutRandomDay(day_ + 1, 5, 200, &expect);
  RotateAll(day_ + 2);
  cluster_.Stop(ArchiveName(1));
  const auto shard0_before = FileLines(ArchiveFile(0));
  EXPECT_NE(RunDay(day_ + 1, &out), 0);
  EXPECT_NE(out.find("archive-1"), std::string::npos) << out;
  // Nothing deployed: the old generation serves, its files are untouched.
  EXPECT_EQ(ServedGeneration(0), 1);
  EXPECT_EQ(FileLines(ArchiveFile(0)), shard0_before);
  ExpectArchiveEquals(first);
  // The realtime day was not marked exported.
  EXPECT_EQ(Admin("POST", realtime_ports_[0], "/clear?date=" + FormatDate(day_ + 1)).status_code, 409);

  StartArchive(1);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
  EXPECT_EQ(ServedGeneration(1), 2);
  EXPECT_EQ(Admin("POST", realtime_ports_[1], "/clear?date=" + FormatDate(day_ + 1)).status_code, 200);
}

// An older day folded with D in a generation that --build-only left
// undeployed is marked complete when the next day's run finishes that
// generation, so that run does not export and fold it a second time.
TEST_F(RebuildIntegration, AnOlderDayInABuiltOnlyGenerationIsFoldedOnce) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 61, 200, &expect);
  RotateAll(day_ + 1);
  PutRandomDay(day_ + 1, 62, 200, &expect);
  RotateAll(day_ + 2);  // day_ left the ring unexported: retained
  std::string out;
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("folding it with " + FormatDate(day_ + 1)), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 0) << "--build-only deploys nothing";
  PutRandomDay(day_ + 2, 63, 200, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 2);
  ExpectArchiveEquals(expect);
  EXPECT_TRUE(FileExists(cluster_ / ("work/days/" + FormatDate(day_) + "/complete.done")));
}

// Rerunning a night that is done finishes a generation something else left
// built and undeployed (here --build-only of the next day; a load whose
// deploy failed is another), as any run does first: a probe's operator
// reran the night's command and was told "nothing to do" while it waited.
TEST_F(RebuildIntegration, ARerunOfADoneDayFinishesABuiltGeneration) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 71, 200, &expect);
  RotateAll(day_ + 1);
  std::string out;
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1);
  PutRandomDay(day_ + 1, 72, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 1) << "--build-only deploys nothing";
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  EXPECT_NE(out.find("nothing to do"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 2);
  EXPECT_EQ(ServedGeneration(1), 2);
  ExpectArchiveEquals(expect);
}

// conf/local.toml names work_dir and backup_dir relative to where the
// rebuild runs: a load (and the next night's merge with it) must work there
// as with absolute paths.
TEST_F(RebuildIntegration, WorksWithAWorkDirRelativeToWhereItRuns) {
  std::string toml = testing::ReadAll(cluster_.config_path());
  for (const std::string dir : {"work", "backup"}) {
    const std::string absolute = "\"" + (cluster_ / dir) + "\"";
    ASSERT_NE(toml.find(absolute), std::string::npos) << toml;
    toml.replace(toml.find(absolute), absolute.size(), "\"rel/" + dir + "\"");
  }
  testing::WriteAll(cluster_ / "relative.toml", toml);
  Expectation expect;
  testing::WriteAll(cluster_ / "history.csv", TwelveKeysOfHistory("relkey", 0, day_ - 10, &expect));
  const auto rebuild_in_dir = [&](const std::string& args, std::string* out) {
    return RunCommand({"sh", "-c", fmt::format("cd '{}' && exec '{}' {}", cluster_.dir(),
                                               BinaryPath("clickatron-rebuild"), args)},
                      out);
  };
  std::string out;
  ASSERT_EQ(rebuild_in_dir("load --config relative.toml --now history.csv", &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_TRUE(FileExists(cluster_ / "rel/backup/gen-1/shard-0.csv.gz"));
  // The next generation merges with the first (a previous file in rel/work).
  RotateAll(day_);
  PutRandomDay(day_, 71, 200, &expect);
  RotateAll(day_ + 1);
  ASSERT_EQ(rebuild_in_dir("run --config relative.toml --date " + FormatDate(day_), &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
}

// A `load --now` after one whose build failed: the failed build's inputs
// were fixed without the new load, so that generation goes first and the
// new load gets the next one; the command returns once its own data serves.
TEST_F(RebuildIntegration, ALoadNowAfterAFailedBuildDeploysItsOwnDataToo) {
  Expectation expect;
  const auto write_load = [&](const std::string& name, int first_key) {
    testing::WriteAll(cluster_ / name, TwelveKeysOfHistory("load", first_key, day_ - 20, &expect));
    return cluster_ / name;
  };
  std::string out;
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), write_load("a.csv", 0)}, &out), 0) << out;
  // A's queued file gone for a while: the --now of B builds (inputs A and B
  // fixed) and fails.
  std::string queued_a;
  // The queue's one load folder (beside it the queue's lock file, which a
  // directory listing may give last).
  for (const auto& entry : std::filesystem::directory_iterator(cluster_ / "work/queue")) {
    if (entry.is_directory()) queued_a = entry.path().string() + "/sorted.csv";
  }
  ASSERT_TRUE(RenameDurably(queued_a, queued_a + ".aside").ok());
  EXPECT_NE(Rebuild({"load", "--config", cluster_.config_path(), "--now", write_load("b.csv", 100)}, &out), 0) << out;
  ASSERT_TRUE(RenameDurably(queued_a + ".aside", queued_a).ok());
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", write_load("c.csv", 200)}, &out), 0) << out;
  ExpectArchiveEquals(expect);
  EXPECT_EQ(ServedGeneration(0), 2);
}

// Generation 2 (a load --now) rolled back to 1 by restoring 1's files on
// every replica, as operations.md section 6 does; then a corrected load
// --now: it builds generation 2 anew from 1 and deploys it. The work dir's
// gen/2, of the same previous generation and day, was taken for a build to
// go on with: the bad load's inputs, its deploy skipped as done.
TEST_F(RebuildIntegration, ALoadNowAfterARollbackBuildsTheGenerationAnew) {
  Expectation good;
  std::string out;
  testing::WriteAll(cluster_ / "first.csv", TwelveKeysOfHistory("first", 0, day_ - 30, &good));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "first.csv"}, &out), 0) << out;
  ASSERT_EQ(ServedGeneration(0), 1);
  SetAsideServedFiles();  // generation 1's files, as its backup holds them
  Expectation bad = good;
  testing::WriteAll(cluster_ / "bad.csv", TwelveKeysOfHistory("bad", 0, day_ - 20, &bad));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "bad.csv"}, &out), 0) << out;
  ASSERT_EQ(ServedGeneration(0), 2);
  ExpectArchiveEquals(bad);

  ASSERT_NO_FATAL_FAILURE(RollBackToSetAside(1));
  ExpectArchiveEquals(good);

  testing::WriteAll(cluster_ / "fixed.csv", TwelveKeysOfHistory("fixed", 0, day_ - 20, &good));
  ASSERT_EQ(Rebuild({"load", "--config", cluster_.config_path(), "--now", cluster_ / "fixed.csv"}, &out), 0) << out;
  EXPECT_NE(out.find("(a rollback): building it anew"), std::string::npos) << out;
  for (int s = 0; s < kShards; ++s) EXPECT_EQ(ServedGeneration(s), 2) << "archive shard " << s;
  ExpectArchiveEquals(good);
}

// Generation 2 deployed by a run that did not finish (here: its finished
// and day-complete marks taken away, as a run stopped after the deploy
// leaves them), then rolled back to 1 on every replica. The next run does
// not finish 2 (it would tell realtime the day is exported, and mark it
// complete, with the archive lacking it): it builds 2 anew with the day.
TEST_F(RebuildIntegration, ADeployedGenerationRolledBackBeforeItsRunFinishedIsBuiltAnew) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(SecondDayOverASetAsideFirst(41, 200, &expect, &out));
  ASSERT_TRUE(std::filesystem::remove(cluster_ / "work/gen/2/finished.done"));
  ASSERT_TRUE(std::filesystem::remove(cluster_ / ("work/days/" + FormatDate(day_ + 1) + "/complete.done")));
  ASSERT_NO_FATAL_FAILURE(RollBackToSetAside(1));

  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("no archive replica serves it now (a rollback)"), std::string::npos) << out;
  for (int s = 0; s < kShards; ++s) EXPECT_EQ(ServedGeneration(s), 2) << "archive shard " << s;
  ExpectArchiveEquals(expect);
}

// A finished day rolled back (its generation's files replaced by the one
// before on every replica): `status` no longer calls it complete as if it
// were served, it says a replica serves an older last_day.
TEST_F(RebuildIntegration, StatusSaysWhenACompleteDayIsNoLongerServed) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(SecondDayOverASetAsideFirst(43, 100, &expect, &out));
  const std::string served = FormatDate(day_ + 1) + "  exported+sorted per realtime shard [xx]  rejects no  COMPLETE (deployed";
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_NE(out.find(served), std::string::npos) << out;

  ASSERT_NO_FATAL_FAILURE(RollBackToSetAside(1));
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_EQ(out.find(served), std::string::npos) << out;
  EXPECT_NE(out.find(FormatDate(day_ + 1) + "  exported+sorted per realtime shard [xx]  rejects no  COMPLETE when "
                     "built, but not every archive shard serves it now"),
            std::string::npos)
      << out;
  // The first day is still served: complete as before.
  EXPECT_NE(out.find(FormatDate(day_) + "  exported+sorted per realtime shard [xx]  rejects no  COMPLETE (deployed"),
            std::string::npos)
      << out;

  // Shard 0's only replica wiped (no archive at all): no day is served by
  // every shard any more, the first one neither.
  ASSERT_NO_FATAL_FAILURE(WipeArchiveReplica(0, 0));
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  ASSERT_NE(out.find("shard 0: no archive yet"), std::string::npos) << out;
  EXPECT_EQ(out.find("COMPLETE (deployed"), std::string::npos) << out;
  EXPECT_NE(out.find(FormatDate(day_) + "  exported+sorted per realtime shard [xx]  rejects no  COMPLETE when "
                     "built, but not every archive shard serves it now"),
            std::string::npos)
      << out;
}

TEST_F(RebuildIntegration, ExportFailureDeploysNothing) {
  Expectation expect;
  RotateAll(day_);
  PutRandomDay(day_, 6, 80, &expect);
  RotateAll(day_ + 1);
  cluster_.Stop(RealtimeMemberName(1));
  std::string out;
  EXPECT_NE(RunDay(day_, &out), 0);
  EXPECT_NE(out.find("EXPORT_FAILED"), std::string::npos) << out;
  EXPECT_FALSE(FileExists(ArchiveFile(0)));
  EXPECT_EQ(ServedGeneration(0), 0) << "no generation was deployed";
  StartRealtime(1);
  ASSERT_EQ(RunDay(day_, &out), 0) << out;
  // The export that succeeded the first time is not fetched again.
  EXPECT_NE(out.find("realtime shard 0: done by an earlier run"), std::string::npos) << out;
  ExpectArchiveEquals(expect);
}

// A new rebuild host (or a work dir lost): the serving generation is fetched
// from the replicas, checked against their manifests, and merged with as if
// this work dir had built it.
TEST_F(RebuildIntegration, AFreshWorkDirFetchesTheServingGenerationFromTheReplicas) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(8, 300, &expect));
  std::filesystem::remove_all(cluster_ / "work/gen");
  PutRandomDay(day_ + 1, 9, 300, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  EXPECT_NE(out.find("this work dir has no copy of generation 1: fetching it from archive-0"), std::string::npos)
      << out;
  ExpectArchiveEquals(expect);
  for (int i = 0; i < kShards; ++i) EXPECT_EQ(ServedGeneration(i), 2);
  // The fetched copies were only needed to build generation 2.
  EXPECT_FALSE(FileExists(cluster_ / "work/fetched/1"));
}

// Issue 53: a generation built by one rebuild host and never deployed must
// not be deployed after another host moved the archive on (it would drop
// that host's days); the run refuses, naming what to remove, and after that
// the host's next run builds on what is served.
TEST_F(RebuildIntegration, AStalePendingGenerationIsNotDeployedOverANewerOne) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(21, 200, &expect));
  PutRandomDay(day_ + 1, 22, 200, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(BuildDayOnly(day_ + 1, &out), 0) << out;  // host A: generation 2, built on 1, not deployed
  const std::filesystem::path work = cluster_ / "work";
  std::filesystem::rename(work, cluster_ / "work.host-a");

  // Host B (a fresh work dir) archives day+1 and day+2: generations 2 and 3.
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  PutRandomDay(day_ + 2, 23, 200, &expect);
  RotateAll(day_ + 3);
  ASSERT_EQ(RunDay(day_ + 2, &out), 0) << out;
  ASSERT_EQ(ServedGeneration(0), 3);

  // Host A wakes up with its unfinished generation 2.
  std::filesystem::rename(work, cluster_ / "work.host-b");
  std::filesystem::rename(cluster_ / "work.host-a", work);
  PutRandomDay(day_ + 3, 24, 200, &expect);
  RotateAll(day_ + 4);
  EXPECT_NE(RunDay(day_ + 3, &out), 0) << out;
  EXPECT_NE(out.find("another rebuild moved the archive on"), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0), 3);
  EXPECT_EQ(ServedGeneration(1), 3);

  // As the message says: drop it, and the next run builds on generation 3.
  std::filesystem::remove_all(work / "gen/2");
  ASSERT_EQ(RunDay(day_ + 3, &out), 0) << out;
  EXPECT_EQ(ServedGeneration(0), 4);
  ExpectArchiveEquals(expect);
}

class RebuildWithReplicas : public RebuildIntegration {
 protected:
  RebuildWithReplicas() { replicas_ = 2; }
};

// Shard 0's second replica wiped: the first still serves the shard's
// days, so they are complete as before.
TEST_F(RebuildWithReplicas, StatusTakesAShardAsServedWhileOneReplicaHasItsArchive) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(45, 100, &expect));
  ASSERT_NO_FATAL_FAILURE(WipeArchiveReplica(0, 1));
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  // It may have fetched its generation from its peer by now; either way
  // the shard serves the day.
  EXPECT_NE(out.find(FormatDate(day_) + "  exported+sorted per realtime shard [xx]  rejects no  COMPLETE (deployed"),
            std::string::npos)
      << out;
}

// A replica down while a generation is deployed: the others get it, the run
// fails and realtime keeps the day; the replica, started again, catches up
// from its peer by itself, and the rerun finds every replica serving it.
TEST_F(RebuildWithReplicas, AReplicaDownDuringTheDeployCatchesUpByItself) {
  Expectation expect;
  std::string out;
  ASSERT_NO_FATAL_FAILURE(ArchiveFirstDay(10, 300, &expect));
  for (int shard = 0; shard < kShards; ++shard) {
    for (int r = 0; r < 2; ++r) EXPECT_EQ(ServedGeneration(shard, r), 1);
  }
  PutRandomDay(day_ + 1, 11, 300, &expect);
  RotateAll(day_ + 2);
  ASSERT_EQ(cluster_.Stop(ArchiveName(1, 1)), 0);
  EXPECT_NE(RunDay(day_ + 1, &out), 0);
  EXPECT_NE(out.find("REPLICA_UNAVAILABLE"), std::string::npos) << out;
  EXPECT_NE(out.find(ArchiveName(1, 1)), std::string::npos) << out;
  EXPECT_EQ(ServedGeneration(0, 0), 2);
  EXPECT_EQ(ServedGeneration(0, 1), 2);
  EXPECT_EQ(ServedGeneration(1, 0), 2);
  // Not every replica serves the day: realtime still holds it.
  EXPECT_EQ(Admin("POST", realtime_ports_[1], "/clear?date=" + FormatDate(day_ + 1)).status_code, 409);
  // And status says where the deploy stopped (it said "built, not deployed").
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_NE(out.find("unfinished generation 2: day \"" + FormatDate(day_ + 1) +
                     "\", 0 late files, 0 loads; partly deployed: 3 of 4 archive replicas serve it"),
            std::string::npos)
      << out;

  StartArchiveReplica(1, 1);
  ASSERT_TRUE(testing::WaitFor([&] { return ServedGeneration(1, 1) == 2; })) << cluster_.LogTail(ArchiveName(1, 1));
  EXPECT_EQ(FileLines(ArchiveFile(1, 1)), FileLines(ArchiveFile(1, 0)));
  // Every replica serves it now, the run not finished: status says so (a
  // probe read "partly deployed: 2 of 2 … deploys it to the others").
  ASSERT_EQ(Rebuild({"status", "--config", cluster_.config_path()}, &out), 0) << out;
  EXPECT_NE(out.find("unfinished generation 2: day \"" + FormatDate(day_ + 1) +
                     "\", 0 late files, 0 loads; every archive replica (4) serves it, its deploy not yet noted"),
            std::string::npos)
      << out;
  ASSERT_EQ(RunDay(day_ + 1, &out), 0) << out;
  ExpectArchiveEquals(expect);
  for (int shard = 0; shard < kShards; ++shard) {
    for (int r = 0; r < 2; ++r) EXPECT_EQ(FileLines(ArchiveFile(shard, r)), expect.ShardLines(shard));
  }
  EXPECT_EQ(Admin("POST", realtime_ports_[1], "/clear?date=" + FormatDate(day_ + 1)).status_code, 200);
}

}  // namespace
}  // namespace clickatron
