#include "ring.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "clickatron/key_codec.h"
#include "clickatron/ymdh.h"
#include "small_store.h"
#include "testutil/testutil.h"

// A namespace of this file's own: its names beside those of the other files
// compiled with it in one unity file (tests/CMakeLists.txt).
namespace clickatron::realtime::ring_test {
namespace {

using clickatron::testing::TempDir;

const int64_t kToday = DaysFromCivil({2024, 3, 10});

// A realtime total key for `day` at `hour`, built with the core codecs.
std::string TotalKey(const std::string& tkey, int64_t day, int hour) {
  return "u|" + tkey + "." + *YmdhFromUnix(day * kSecondsPerDay + hour * kSecondsPerHour);
}

class RingTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(kToday); }

  void Open(int64_t clock_today) {
    ring_.reset();
    store_.reset();
    Result<std::unique_ptr<ShardStore>> store = testing::OpenSmallStore(tmp_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    Result<std::unique_ptr<Ring>> ring = Ring::Open(store_.get(), clock_today);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    ring_ = std::move(ring).value();
  }

  Result<ApplyOutcome> Apply(const std::string& source, uint64_t seq, const std::string& body) {
    bodies_.push_back(body);  // the parsed batch holds views into it
    Result<ParsedBatch> batch = ParseBatch(bodies_.back());
    if (!batch.ok()) return batch.status();
    return ring_->Apply(source, seq, *batch);
  }

  std::optional<std::string> Get(const std::string& key, std::optional<int64_t> day = std::nullopt) {
    Result<std::optional<std::string>> v = ring_->Get(key, day);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : std::nullopt;
  }

  std::string ScanAll(const std::string& prefix, std::optional<int64_t> day = std::nullopt, uint64_t limit = 0) {
    Result<std::unique_ptr<LineSource>> scan = ring_->Scan(prefix, day, limit);
    EXPECT_TRUE(scan.ok());
    std::string out;
    while ((*scan)->Fill(&out, 64)) {
    }
    EXPECT_TRUE((*scan)->status().ok());
    return out;
  }

  std::string ExportAll(int64_t day) {
    EXPECT_TRUE(ring_->Seal(day).ok());
    // As the server does: the day's records in memory reach the store first
    // (the checkpointer is inline here, so this completes at once).
    bool persisted = false;
    ring_->checkpointer().WhenPersisted([&](Status st) { persisted = st.ok(); });
    EXPECT_TRUE(persisted);
    Result<std::unique_ptr<LineSource>> scan = ring_->Export(day);
    EXPECT_TRUE(scan.ok());
    std::string out;
    while ((*scan)->Fill(&out, 100)) {
    }
    return out;
  }

  TempDir tmp_;
  std::unique_ptr<ShardStore> store_;
  std::unique_ptr<Ring> ring_;
  std::deque<std::string> bodies_;
};

TEST_F(RingTest, NewRingHoldsYesterdayTodayTomorrowAroundTheClock) {
  EXPECT_EQ(ring_->today(), kToday);
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday - 1, kToday, kToday + 1}));
  EXPECT_EQ(ring_->PositionOf(kToday - 1), Position::kYesterday);
  EXPECT_EQ(ring_->PositionOf(kToday + 1), Position::kTomorrow);
  EXPECT_EQ(store_->Days(), (std::vector<int64_t>{kToday - 1, kToday, kToday + 1}));
}

TEST_F(RingTest, BatchIsAppliedOnceAndItsReplayIsADuplicate) {
  const std::string key = TotalKey("jehiah", kToday, 5);
  Result<ApplyOutcome> first = Apply("api-0", 1, key + ",3\n" + key + ",2\n");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->duplicate);
  EXPECT_EQ(first->applied, 2u);
  Result<ApplyOutcome> again = Apply("api-0", 1, key + ",3\n" + key + ",2\n");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(again->seq, 1u);
  EXPECT_EQ(Get(key), "5");
  // Another source has its own watermark; gaps in seq are fine.
  ASSERT_TRUE(Apply("api-1", 1, key + ",1\n").ok());
  ASSERT_TRUE(Apply("api-0", 7, key + ",1\n").ok());
  EXPECT_TRUE(Apply("api-0", 6, key + ",100\n")->duplicate);
  EXPECT_EQ(Get(key), "7");
  EXPECT_EQ(ring_->Watermark("api-0"), 7u);
  EXPECT_EQ(ring_->Watermark("api-1"), 1u);
  EXPECT_EQ(ring_->Watermark("never"), 0u);
}

TEST_F(RingTest, LineForADayNotOpenRefusesTheWholeBatch) {
  const std::string good = TotalKey("a", kToday, 1);
  const std::string old = TotalKey("a", kToday - 2, 1);
  Result<ApplyOutcome> r = Apply("api-0", 1, good + ",1\n" + old + ",1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "DAY_NOT_OPEN");
  EXPECT_EQ(r.status().HttpStatus(), 409);
  EXPECT_FALSE(Get(good).has_value());
  EXPECT_EQ(ring_->Watermark("api-0"), 0u);
  // The API re-sends the rest under the same seq.
  ASSERT_TRUE(Apply("api-0", 1, good + ",1\n").ok());
  EXPECT_EQ(Get(good), "1");
}

TEST_F(RingTest, BatchSpanningThreeDaysCommitsWithItsWatermarkAcrossReopen) {
  const std::string hash = Hash12("http://example.com/a long value");
  const std::string body = TotalKey("a", kToday - 1, 23) + ",1\n" + TotalKey("a", kToday, 0) + ",2\n" +
                           TotalKey("a", kToday + 1, 0) + ",3\nl|" + hash + ",http://example.com/a long value\n";
  ASSERT_TRUE(Apply("api-0", 9, body).ok());
  EXPECT_EQ(ring_->DurableWatermark("api-0"), 0u);  // in memory only
  ASSERT_TRUE(ring_->checkpointer().Drain().ok());   // a clean stop persists it
  EXPECT_EQ(ring_->DurableWatermark("api-0"), 9u);
  Open(kToday);
  EXPECT_EQ(ring_->Watermark("api-0"), 9u);
  EXPECT_EQ(ring_->DurableWatermark("api-0"), 9u);
  EXPECT_EQ(Get(TotalKey("a", kToday - 1, 23)), "1");
  EXPECT_EQ(Get(TotalKey("a", kToday, 0)), "2");
  EXPECT_EQ(Get(TotalKey("a", kToday + 1, 0)), "3");
  // The lookup went to Today's store.
  EXPECT_EQ(Get("l|" + hash, kToday), "http://example.com/a long value");
  EXPECT_FALSE(Get("l|" + hash, kToday - 1).has_value());
}

// A crash (no checkpoint since): the batch is gone with its watermark, so the
// API's re-send applies it once.
TEST_F(RingTest, BatchNotYetCheckpointedIsLostWithItsWatermarkAndAppliesOnceOnResend) {
  const std::string key = TotalKey("a", kToday, 5);
  ASSERT_TRUE(Apply("api-0", 1, key + ",2\n").ok());
  ASSERT_TRUE(ring_->checkpointer().Drain().ok());
  ASSERT_TRUE(Apply("api-0", 2, key + ",3\n").ok());
  EXPECT_EQ(Get(key), "5");
  Open(kToday);  // without a checkpoint: as kill -9 would
  EXPECT_EQ(ring_->Watermark("api-0"), 1u);
  EXPECT_EQ(Get(key), "2");
  EXPECT_TRUE(Apply("api-0", 1, key + ",2\n")->duplicate);
  ASSERT_FALSE(Apply("api-0", 2, key + ",3\n")->duplicate);
  EXPECT_EQ(Get(key), "5");
}

TEST_F(RingTest, ExportRefusesADayWithRecordsStillInMemory) {
  const std::string key = TotalKey("a", kToday - 1, 4);
  ASSERT_TRUE(Apply("api-0", 1, key + ",4\n").ok());
  ASSERT_TRUE(ring_->Seal(kToday - 1).ok());
  Result<std::unique_ptr<LineSource>> scan = ring_->Export(kToday - 1);
  ASSERT_FALSE(scan.ok());
  EXPECT_EQ(scan.status().reason(), "NOT_PERSISTED");
}

TEST_F(RingTest, TodayAndTomorrowCannotBeSealed) {
  EXPECT_EQ(ring_->Seal(kToday).reason(), "DAY_STILL_CURRENT");
  EXPECT_EQ(ring_->Seal(kToday + 1).reason(), "DAY_STILL_CURRENT");
  EXPECT_EQ(ring_->Seal(kToday - 5).reason(), "DAY_NOT_IN_RING");
  EXPECT_TRUE(ring_->Seal(kToday - 1).ok());
  EXPECT_FALSE(ring_->IsOpen(kToday - 1));
  Result<ApplyOutcome> r = Apply("api-0", 1, TotalKey("a", kToday - 1, 3) + ",1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "DAY_NOT_OPEN");
}

TEST_F(RingTest, RotationRetainsAnUnexportedDayReadableButClosed) {
  const std::string key = TotalKey("a", kToday - 1, 4);
  ASSERT_TRUE(Apply("api-0", 1, key + ",4\n").ok());
  Result<RotateReport> r = ring_->RotateTo(kToday + 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->created, (std::vector<int64_t>{kToday + 2}));
  EXPECT_EQ(r->retained, (std::vector<int64_t>{kToday - 1}));
  EXPECT_TRUE(r->cleared.empty());
  EXPECT_EQ(ring_->PositionOf(kToday - 1), Position::kRetained);
  EXPECT_FALSE(ring_->IsOpen(kToday - 1));
  EXPECT_EQ(Get(key), "4");
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday, kToday + 1, kToday + 2}));
  // Refused to clear until exported; marking it exported clears it at once.
  EXPECT_EQ(ring_->Clear(kToday - 1).reason(), "NOT_EXPORTED");
  Result<std::string> state = ring_->MarkExported(kToday - 1);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(*state, "cleared");
  EXPECT_FALSE(Get(key).has_value());
  EXPECT_FALSE(store_->HasDay(kToday - 1));
}

TEST_F(RingTest, ExportedYesterdayIsClearedByTheNextRotation) {
  const std::string key = TotalKey("a", kToday - 1, 4);
  ASSERT_TRUE(Apply("api-0", 1, key + ",4\n").ok());
  EXPECT_EQ(ring_->MarkExported(kToday - 1).status().reason(), "NOT_SEALED");
  EXPECT_EQ(ExportAll(kToday - 1), key + ",4\n");
  EXPECT_EQ(*ring_->MarkExported(kToday - 1), "exported");
  EXPECT_EQ(Get(key), "4");  // still Yesterday: kept until it leaves
  Result<RotateReport> r = ring_->RotateTo(kToday + 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cleared, (std::vector<int64_t>{kToday - 1}));
  EXPECT_TRUE(r->retained.empty());
  EXPECT_FALSE(Get(key).has_value());
  EXPECT_FALSE(store_->HasDay(kToday - 1));
  EXPECT_EQ(*ring_->MarkExported(kToday - 1), "absent");
}

TEST_F(RingTest, TheNewestDayMarkedExportedIsSaidAfterItLeftTheRingAndAcrossReopen) {
  ASSERT_FALSE(ring_->HandedOverThrough().has_value());
  ASSERT_FALSE(ExportAll(kToday - 1).size());
  ASSERT_TRUE(ring_->MarkExported(kToday - 1).ok());
  ASSERT_TRUE(ring_->RotateTo(kToday + 2).ok());  // cleared, then out of the positions: forgotten
  ASSERT_FALSE(ring_->days().contains(kToday - 1));
  EXPECT_EQ(ring_->HandedOverThrough(), kToday - 1);
  Open(kToday);
  EXPECT_FALSE(ring_->days().contains(kToday - 1));
  EXPECT_EQ(ring_->HandedOverThrough(), kToday - 1) << "the handover went back with the restart";
}

TEST_F(RingTest, ClearedYesterdayIsNotRecreatedOnReopen) {
  ASSERT_FALSE(ExportAll(kToday - 1).size());
  ASSERT_TRUE(ring_->MarkExported(kToday - 1).ok());
  ASSERT_TRUE(ring_->Clear(kToday - 1).ok());
  EXPECT_FALSE(store_->HasDay(kToday - 1));
  Open(kToday);
  EXPECT_FALSE(store_->HasDay(kToday - 1));
  EXPECT_FALSE(ring_->IsOpen(kToday - 1));
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday, kToday + 1}));
}

TEST_F(RingTest, RingStateSurvivesReopenWhateverTheClockSays) {
  ASSERT_TRUE(ring_->RotateTo(kToday + 3).ok());
  ASSERT_TRUE(ring_->Seal(kToday + 2).ok());
  Open(kToday);  // the clock argument only seeds a new ring
  EXPECT_EQ(ring_->today(), kToday + 3);
  EXPECT_FALSE(ring_->IsOpen(kToday + 2));
  EXPECT_TRUE(ring_->days().at(kToday + 2).sealed);
  // Days that left unexported are retained and sealed.
  for (int64_t d : {kToday - 1, kToday, kToday + 1}) {
    EXPECT_EQ(ring_->PositionOf(d), Position::kRetained);
    EXPECT_TRUE(ring_->days().at(d).sealed);
    EXPECT_TRUE(store_->HasDay(d));
  }
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday + 3, kToday + 4}));
}

TEST_F(RingTest, RotationGoesForwardOnlyOnceAShardHasData) {
  ASSERT_TRUE(ring_->RotateTo(kToday + 1).ok());
  ASSERT_TRUE(Apply("api-0", 1, TotalKey("k", kToday + 1, 3) + ",1\n").ok());
  EXPECT_EQ(ring_->RotateTo(kToday).status().reason(), "ROTATE_BACKWARDS");
  Result<RotateReport> same = ring_->RotateTo(kToday + 1);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->created.empty());
}

TEST_F(RingTest, AShardThatNeverTookABatchMayStartInThePast) {
  Result<RotateReport> back = ring_->RotateTo(kToday - 400);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday - 401, kToday - 400, kToday - 399}));
  // Its old (empty) stores are dropped, not retained forever.
  for (int64_t d : {kToday - 1, kToday, kToday + 1}) EXPECT_FALSE(store_->HasDay(d)) << d;
}

TEST_F(RingTest, WatermarkOutlivesTheDayItWasWrittenWith) {
  ASSERT_TRUE(Apply("api-0", 12, TotalKey("a", kToday - 1, 1) + ",1\n").ok());
  ExportAll(kToday - 1);
  ASSERT_TRUE(ring_->MarkExported(kToday - 1).ok());
  ASSERT_TRUE(ring_->Clear(kToday - 1).ok());
  Open(kToday);
  EXPECT_EQ(ring_->Watermark("api-0"), 12u);
  EXPECT_TRUE(Apply("api-0", 12, TotalKey("a", kToday, 1) + ",1\n")->duplicate);
}

TEST_F(RingTest, InterruptedClearIsFinishedOnOpen) {
  ASSERT_TRUE(ring_->RotateTo(kToday + 2).ok());  // kToday-1 and kToday retained
  // Simulate a crash after the decision to clear was persisted but before
  // the drop: edit the persisted state the way Clear() does first.
  Result<std::optional<std::string>> saved = store_->GetMeta("ring");
  ASSERT_TRUE(saved.ok() && saved->has_value());
  const std::string date = FormatDate(kToday);
  std::string state = **saved;
  const std::string entry = "{\"cleared\":false,\"clearing\":false,\"date\":\"" + date + "\",\"exported\":false";
  const size_t at = state.find(entry);
  ASSERT_NE(at, std::string::npos) << state;
  state.replace(at, entry.size(),
                "{\"cleared\":false,\"clearing\":true,\"date\":\"" + date + "\",\"exported\":true");
  ASSERT_TRUE(store_->PutMeta("ring", state, true).ok());
  Open(kToday);
  EXPECT_FALSE(store_->HasDay(kToday));
  EXPECT_TRUE(store_->HasDay(kToday - 1));  // not exported: still retained
  EXPECT_EQ(ring_->days().count(kToday), 0u);
}

TEST_F(RingTest, ScanMergesDaysInKeyOrderWithPrefixAndLimit) {
  const std::string hash = Hash12("a value with spaces");
  std::map<std::string, std::string> oracle;
  std::string body;
  for (int64_t day : {kToday - 1, kToday, kToday + 1}) {
    for (const char* tkey : {"zed", "abc", "mid"}) {
      const std::string key = TotalKey(tkey, day, 7);
      body += key + ",2\n";
      oracle[key] = "2";
    }
  }
  body += "l|" + hash + ",a value with spaces\n";
  ASSERT_TRUE(Apply("api-0", 1, body).ok());
  ASSERT_TRUE(ring_->RotateTo(kToday + 1).ok());  // puts the same lookup in a second day
  ASSERT_TRUE(Apply("api-0", 2, "l|" + hash + ",a value with spaces\n").ok());
  oracle["l|" + hash] = "a value with spaces";

  std::string all;
  for (const auto& [k, v] : oracle) all += k + "," + v + "\n";
  EXPECT_EQ(ScanAll(""), all);
  std::string only_u;
  for (const auto& [k, v] : oracle) {
    if (k.rfind("u|", 0) == 0) only_u += k + "," + v + "\n";
  }
  EXPECT_EQ(ScanAll("u|"), only_u);
  EXPECT_EQ(ScanAll("u|", std::nullopt, 2), only_u.substr(0, only_u.find('\n', only_u.find('\n') + 1) + 1));
  const std::string mid_today = TotalKey("mid", kToday, 7);
  EXPECT_EQ(ScanAll("u|mid.", kToday), mid_today + ",2\n");
  EXPECT_EQ(ScanAll("nothing|"), "");
}

// Issue 53: a store wiped and restarted comes back with a day the archive
// already holds as its Yesterday; the API's re-send of that day must not be
// applied (the next rebuild would fold it a second time).
TEST_F(RingTest, DaysAtOrBeforeTheArchivesLastDayAreNeverOpenAndAreMarkedExported) {
  const int64_t yesterday = kToday - 1;
  ASSERT_TRUE(Apply("api-0", 1, TotalKey("a", yesterday, 3) + ",1\n").ok());
  ASSERT_TRUE(ring_->NoteArchivedThrough(yesterday).ok());
  EXPECT_FALSE(ring_->IsOpen(yesterday));
  EXPECT_EQ(ring_->OpenDays(), (std::vector<int64_t>{kToday, kToday + 1}));
  EXPECT_TRUE(ring_->days().at(yesterday).exported);
  Result<ApplyOutcome> resent = Apply("api-0", 2, TotalKey("a", yesterday, 3) + ",1\n");
  ASSERT_FALSE(resent.ok());
  EXPECT_EQ(resent.status().reason(), "DAY_NOT_OPEN");
  // Today is untouched.
  EXPECT_TRUE(Apply("api-0", 3, TotalKey("a", kToday, 3) + ",1\n").ok());

  // The mark survives a restart, and is never lowered.
  Open(kToday);
  ASSERT_EQ(ring_->archived_through(), std::optional<int64_t>(yesterday));
  EXPECT_FALSE(ring_->IsOpen(yesterday));
  ASSERT_TRUE(ring_->NoteArchivedThrough(kToday - 5).ok());
  EXPECT_EQ(ring_->archived_through(), std::optional<int64_t>(yesterday));
}

TEST_F(RingTest, ANewRingThatLearnsTheArchivesLastDayTakesNothingForIt) {
  // As the server does at start: before any batch.
  ASSERT_TRUE(ring_->NoteArchivedThrough(kToday - 1).ok());
  Result<ApplyOutcome> r = Apply("api-0", 1, TotalKey("a", kToday - 1, 23) + ",5\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "DAY_NOT_OPEN");
  EXPECT_EQ(Get(TotalKey("a", kToday - 1, 23)), std::nullopt);
}

TEST_F(RingTest, ADayTheArchiveHoldsIsClearedWhenItLeavesTheRingNotRetained) {
  const int64_t yesterday = kToday - 1;
  ASSERT_TRUE(Apply("api-0", 1, TotalKey("a", yesterday, 3) + ",1\n").ok());
  ASSERT_TRUE(ring_->Seal(yesterday).ok());  // exported by a rebuild whose /exported never came
  ASSERT_TRUE(ring_->NoteArchivedThrough(yesterday).ok());
  Result<RotateReport> report = ring_->RotateTo(kToday + 1);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->cleared, (std::vector<int64_t>{yesterday}));
  EXPECT_TRUE(report->retained.empty());
}

}  // namespace
}  // namespace clickatron::realtime::ring_test
