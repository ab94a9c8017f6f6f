// FoldedDeletion: which of the rebuild's inputs a deletion takes records out
// of (rebuild/deletions.h), from the record an API node answers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clickatron/ymdh.h"
#include "deletions.h"

namespace clickatron::rebuild::deletions_test {
namespace {

constexpr int64_t kDay = 15424;  // 2012-03-25

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
          {"cuts", {{"0", {{"api-0", 40}, {"api-1", 7}}}, {"1", {{"api-0", 12}}}}},
          {"epochs", {{"0", 3}, {"1", 1}}},
          {"realtime_done", realtime_done},
          {"peers_told", realtime_done},
          {"folded_into", 0}};
}

TEST(FoldedDeletion, OnlyOneWhoseRealtimePartIsDoneIsFolded) {
  auto pending = FoldedDeletion::FromApiJson(ApiRecord(false));
  ASSERT_TRUE(pending.ok());
  EXPECT_FALSE(pending->has_value());
  auto done = FoldedDeletion::FromApiJson(ApiRecord(true));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_TRUE(done->has_value());
  const FoldedDeletion& d = **done;
  EXPECT_EQ(d.lookup, "l|h0aMB8AuNw4=");  // hashed and for all time: its lookup goes too
  // The work dir's copy reads back the same.
  auto again = FoldedDeletion::FromJson(d.ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), d.ToJson());
  EXPECT_FALSE(FoldedDeletion::FromApiJson({{"realtime_done", true}, {"id", "x"}}).ok());
}

TEST(FoldedDeletion, SaysWhichInputsMayHoldItsRecords) {
  FoldedDeletion d = **FoldedDeletion::FromApiJson(ApiRecord(true));
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
  EXPECT_TRUE(d.InExport(2, 100));  // a shard it has no epoch for
  // A load queued before it.
  EXPECT_TRUE(d.InLoad(1699999999));
  EXPECT_FALSE(d.InLoad(1700000000));
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
