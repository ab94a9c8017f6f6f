// FoldedDeletion: which of the rebuild's inputs a deletion takes records out
// of (rebuild/deletions.h), from the record an API node answers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clickatron/ymdh.h"
#include "deletions.h"

namespace clickatron::rebuild::deletions_test {
namespace {

constexpr int64_t kDay = 15424;  // 2012-03-25

// realtime_done false: as a peer's copy from before the cut was taken.
nlohmann::json ApiRecord(bool realtime_done) {
  return {{"id", "del-1"},
          {"ns", "u"},
          {"key", "http://a-long-link.example/x"},
          {"tkey", "h0aMB8AuNw4="},
          {"hashed", true},
          {"all_time", true},
          {"from", kDay * kSecondsPerDay},
          {"to", (kDay + 1) * kSecondsPerDay},
          {"created", 1700000000},
          {"owner", "api-0"},
          {"cuts", realtime_done ? nlohmann::json{{"0", {{"api-0", 40}, {"api-1", 7}}}, {"1", {{"api-0", 12}}}}
                                 : nlohmann::json::object()},
          {"epochs", realtime_done ? nlohmann::json{{"0", 3}, {"1", 1}} : nlohmann::json::object()},
          {"realtime_done", realtime_done},
          {"peers_told", realtime_done},
          {"folded_into", 0}};
}

// One whose cut is not taken yet is folded too: everything there is came
// before its cut, so it takes its records out of every input.
TEST(FoldedDeletion, OneWithoutACutYetTakesOutOfEveryInput) {
  auto pending = FoldedDeletion::FromApiJson(ApiRecord(false));
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_FALSE(pending->CutsKnown());
  EXPECT_TRUE(pending->InExport(0, 1000));
  EXPECT_TRUE(pending->InExport(7, 0));
  EXPECT_TRUE(pending->InLoad(1800000000));
  OplogHeader late;
  late.source = "api-9";
  late.shard = 0;
  late.seq = 1000000;
  const std::string in = *YmdhFromUnix(kDay * kSecondsPerDay + 5 * kSecondsPerHour);
  EXPECT_TRUE(pending->CoversLateLine(late, "u|h0aMB8AuNw4=." + in + ",3"));
  EXPECT_FALSE(pending->CoversLateLine(late, "u|other." + in + ",3"));
}

TEST(FoldedDeletion, ReadsBackFromTheWorkDirAndRefusesARecordWithoutItsParts) {
  auto done = FoldedDeletion::FromApiJson(ApiRecord(true));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  const FoldedDeletion& d = *done;
  EXPECT_TRUE(d.CutsKnown());
  EXPECT_EQ(d.lookup, "l|h0aMB8AuNw4=");  // hashed and for all time: its lookup goes too
  auto again = FoldedDeletion::FromJson(d.ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), d.ToJson());
  EXPECT_FALSE(FoldedDeletion::FromApiJson({{"realtime_done", true}, {"id", "x"}}).ok());
}

TEST(FoldedDeletion, SaysWhichInputsMayHoldItsRecords) {
  FoldedDeletion d = *FoldedDeletion::FromApiJson(ApiRecord(true));
  // The previous generation, until one folded it in.
  EXPECT_TRUE(d.InPrevious(5));
  d.folded_into = 6;
  EXPECT_TRUE(d.InPrevious(5));   // built before it (a rollback)
  EXPECT_FALSE(d.InPrevious(6));
  EXPECT_FALSE(d.InPrevious(7));
  // An export read before its tombstone on that shard.
  EXPECT_TRUE(d.InExport(0, 2));
  EXPECT_FALSE(d.InExport(0, 3));
  EXPECT_FALSE(d.InExport(1, 1));
  EXPECT_FALSE(d.InExport(2, 0));  // a shard added after it: no tombstone there, all of it came after
  // A load queued before its cut (before it was made, for a record without
  // the cut's time), or in the cut's own second: both are whole seconds, and
  // an erasure must not leave what may have come first.
  EXPECT_TRUE(d.InLoad(1699999999));
  EXPECT_TRUE(d.InLoad(1700000000));
  EXPECT_FALSE(d.InLoad(1700000001));
  d.cut_unix = 1700000005;
  EXPECT_TRUE(d.InLoad(1700000004));
  EXPECT_TRUE(d.InLoad(1700000005));
  EXPECT_FALSE(d.InLoad(1700000006));
  // Late data: a frame at or below its node's cut on that shard, lines of
  // the key in the range, and its lookup.
  const std::string in = *YmdhFromUnix(kDay * kSecondsPerDay + 5 * kSecondsPerHour);
  const std::string total = "u|h0aMB8AuNw4=." + in + ",3";
  const auto frame = [](std::string source, int shard, uint64_t seq) {
    OplogHeader h;
    h.source = std::move(source);
    h.shard = shard;
    h.seq = seq;
    return h;
  };
  const OplogHeader at_cut = frame("api-0", 0, 40);
  const OplogHeader after_cut = frame("api-0", 0, 41);
  const OplogHeader other_shard = frame("api-1", 1, 1);  // api-1 had sent shard 1 nothing
  EXPECT_TRUE(d.CoversLateLine(at_cut, total));
  EXPECT_TRUE(d.CoversLateLine(at_cut, "c.u|h0aMB8AuNw4=.US." + in + ",3"));
  EXPECT_TRUE(d.CoversLateLine(at_cut, "l|h0aMB8AuNw4=,http://a-long-link.example/x"));
  EXPECT_FALSE(d.CoversLateLine(at_cut, "u|other." + in + ",3"));
  EXPECT_FALSE(d.CoversLateLine(at_cut, "u|h0aMB8AuNw4=." + *YmdhFromUnix((kDay + 1) * kSecondsPerDay) + ",3"));
  EXPECT_FALSE(d.CoversLateLine(after_cut, total));
  EXPECT_FALSE(d.CoversLateLine(other_shard, total));
}

}  // namespace
}  // namespace clickatron::rebuild::deletions_test
